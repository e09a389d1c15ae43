/**
 * QuotaStore's admission: `reserve` a slot under a limit, then `release` it. The raw mirror is
 * `QuotaStoreSql`'s locked count-and-insert transaction (pg's advisory lock included; sqlite
 * sends no lock statement, its write lock is the transaction) and the single delete, every
 * statement named on pg as the store sends them.
 */
import { Effect, Option } from "effect"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { NOW, type Op, runId } from "../Op.js"
import { pick } from "../Raw.js"

const LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('quota-admission:' || octet_length($1::text) || ':' || $1::text, 0))`
const COUNT = `SELECT COUNT(*) AS n, COUNT(CASE WHEN run_id = $1 THEN 1 END) AS mine FROM quota_running WHERE tenant = $2`
const ADMIT = `INSERT INTO quota_running (tenant, run_id, admitted_at) VALUES ($1, $2, $3) ON CONFLICT (tenant, run_id) DO NOTHING`
const RELEASE = `DELETE FROM quota_running WHERE tenant = $1 AND run_id = $2`

const LIMIT = 1_000

export const reserveRelease: Op = {
  name: "quota reserve + release",
  ops: 3000,
  make: (cell) => ({
    seed: async () => {},
    store: (i) =>
      Effect.gen(function* () {
        const store = yield* QuotaStore
        yield* store.reserve(runId(i), Option.some(LIMIT), NOW)
        yield* store.release(runId(i))
      }),
    raw: async (raw, i) => {
      await raw.tx(async (q) => {
        if (raw.dialect === "pg") await q(LOCK, [cell.tenant], true)
        const [row] = await q(pick(raw, COUNT), [runId(i), cell.tenant], true)
        if (Number(row?.mine ?? 0) > 0) return
        if (Number(row?.n ?? 0) >= LIMIT) throw new Error("raw reserve: too many runs")
        await q(pick(raw, ADMIT), [cell.tenant, runId(i), NOW], true)
      })
      await raw.query(pick(raw, RELEASE), [cell.tenant, runId(i)], true)
    },
  }),
}
