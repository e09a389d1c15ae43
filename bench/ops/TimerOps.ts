/**
 * TimerStore's sweep: `claimDue` taking 1 and 100 due timers. The raw mirror is the one
 * `UPDATE … IN (SELECT … FOR UPDATE SKIP LOCKED)` statement `TimerStoreSql` sends, in its transaction.
 */
import { Effect } from "effect"
import { CLAIM_LEASE_SECS } from "../../src/domain/Timer.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import { effectKey, expect, NOW, type Op, runId } from "../Op.js"
import { insertRows, pick } from "../Raw.js"

const PICK = `SELECT tenant, run_id, effect_key FROM timers WHERE tenant = $5 AND claimable_at <= $6 ORDER BY fire_at, run_id, effect_key LIMIT $7`
// sqlite: the store walks timers_pending in claim order and stops at the limit (TimerStoreSql).
const PICK_SQLITE = `SELECT tenant, run_id, effect_key FROM timers INDEXED BY timers_pending WHERE tenant = $5 AND fire_at <= $6 AND claimable_at <= $7 ORDER BY fire_at, run_id, effect_key LIMIT $8`
const claim = (pick: string, lock: string) =>
  `UPDATE timers SET claimed_at = $1, claimable_at = CAST($2 AS BIGINT) + $3 WHERE tenant = $4 AND (tenant, run_id, effect_key) IN (${pick}${lock}) RETURNING run_id, effect_key, case_id, step, phase, fire_at`

const claimDue = (limit: number, ops: number): Op => ({
  name: `claimDue (limit ${limit})`,
  ops,
  make: (cell) => ({
    // Enough due timers for every claim, plus a spare batch per worker: SKIP LOCKED may pass over
    // rows another worker holds, and the last claims must still find a full batch.
    seed: (raw) =>
      insertRows(
        raw,
        "timers",
        ["tenant", "run_id", "effect_key", "case_id", "step", "phase", "fire_at", "claimed_at", "claimable_at"],
        Array.from({ length: (cell.count + cell.workers) * limit }, (_, j) => {
          const fireAt = NOW - 1 - (j % 3600)
          return [cell.tenant, runId(j), effectKey(0), null, 0, "forward", fireAt, null, fireAt]
        }),
      ),
    store: () =>
      Effect.flatMap(TimerStore, (s) => s.claimDue(NOW, limit)).pipe(
        Effect.map((timers) => expect(timers.length > 0, "claimDue claimed nothing")),
      ),
    raw: async (raw) => {
      await raw.tx(async (q) => {
        const rows =
          raw.dialect === "pg"
            ? await q(claim(PICK, " FOR UPDATE SKIP LOCKED"), [
                NOW,
                NOW,
                CLAIM_LEASE_SECS,
                cell.tenant,
                cell.tenant,
                NOW,
                limit,
              ])
            : await q(pick(raw, claim(PICK_SQLITE, "")), [
                NOW,
                NOW,
                CLAIM_LEASE_SECS,
                cell.tenant,
                cell.tenant,
                NOW,
                NOW,
                limit,
              ])
        expect(rows.length > 0, "raw claimDue claimed nothing")
      })
    },
  }),
})

export const claimDue1 = claimDue(1, 3000)
export const claimDue100 = claimDue(100, 400)
