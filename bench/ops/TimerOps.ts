/**
 * TimerStore's sweep: `claimDue` taking 1 and 100 due timers. The raw mirror is the one statement
 * `TimerStoreSql` sends, in its transaction: on pg `WITH fresh …, lapsed … (each FOR UPDATE SKIP
 * LOCKED), picked … UPDATE … FROM picked`, on sqlite `UPDATE … IN (SELECT … UNION ALL …)`.
 */
import { Effect } from "effect"
import { CLAIM_LEASE_SECS } from "../../src/domain/Timer.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import { effectKey, expect, NOW, type Op, runId } from "../Op.js"
import { insertRows, pick } from "../Raw.js"

// sqlite: the store walks the never-claimed timers in claim order and the lapsed claims, and
// takes the first `limit` of both (TimerStoreSql, migration 0007).
const PICK_SQLITE = `SELECT tenant, run_id, effect_key FROM ( SELECT * FROM ( SELECT tenant, run_id, effect_key, fire_at FROM timers INDEXED BY timers_fresh WHERE tenant = $5 AND claimed_at IS NULL AND fire_at <= $6 ORDER BY fire_at, run_id, effect_key LIMIT $7) UNION ALL SELECT * FROM ( SELECT tenant, run_id, effect_key, fire_at FROM timers INDEXED BY timers_claimed WHERE tenant = $8 AND claimed_at IS NOT NULL AND claimable_at <= $9 ORDER BY fire_at, run_id, effect_key LIMIT $10)) ORDER BY fire_at, run_id, effect_key LIMIT $11`
const CLAIM_PG = `WITH fresh AS MATERIALIZED ( SELECT tenant, run_id, effect_key, fire_at FROM timers WHERE tenant = $4 AND claimed_at IS NULL AND fire_at <= $5 ORDER BY fire_at, run_id, effect_key LIMIT $6 FOR UPDATE SKIP LOCKED), lapsed AS MATERIALIZED ( SELECT tenant, run_id, effect_key, fire_at FROM timers WHERE tenant = $4 AND claimed_at IS NOT NULL AND claimable_at <= $5 ORDER BY fire_at + 0, run_id, effect_key LIMIT $6 FOR UPDATE SKIP LOCKED), picked AS MATERIALIZED ( SELECT tenant, run_id, effect_key FROM (SELECT * FROM fresh UNION ALL SELECT * FROM lapsed) AS takeable ORDER BY fire_at, run_id, effect_key LIMIT $6) UPDATE timers SET claimed_at = $1, claimable_at = CAST($2 AS BIGINT) + $3 FROM picked WHERE timers.tenant = picked.tenant AND timers.run_id = picked.run_id AND timers.effect_key = picked.effect_key RETURNING timers.run_id, timers.effect_key, timers.case_id, timers.step, timers.phase, timers.fire_at`
const claimSqlite = (pick: string) =>
  `UPDATE timers SET claimed_at = $1, claimable_at = CAST($2 AS BIGINT) + $3 WHERE tenant = $4 AND (tenant, run_id, effect_key) IN (${pick}) RETURNING run_id, effect_key, case_id, step, phase, fire_at`

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
            ? await q(CLAIM_PG, [NOW, NOW, CLAIM_LEASE_SECS, cell.tenant, NOW, limit])
            : await q(pick(raw, claimSqlite(PICK_SQLITE)), [
                NOW,
                NOW,
                CLAIM_LEASE_SECS,
                cell.tenant,
                cell.tenant,
                NOW,
                limit,
                cell.tenant,
                NOW,
                limit,
                limit,
              ])
        expect(rows.length > 0, "raw claimDue claimed nothing")
      })
    },
  }),
})

export const claimDue1 = claimDue(1, 3000)
export const claimDue100 = claimDue(100, 400)
