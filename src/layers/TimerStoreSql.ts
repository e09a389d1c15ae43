/**
 * TimerStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Only the claim
 * differs, because only the claim is raced: pg skips rows another sweeper has locked, SQLite has
 * one writer.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { EffectKey } from "../domain/EffectKey.js"
import { CaseId, RunId, StepId } from "../domain/Ids.js"
import { Phase } from "../domain/Phase.js"
import { Tenant } from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { CLAIM_LEASE_SECS, Timer } from "../domain/Timer.js"
import * as JournalStore from "../services/JournalStore.js"
import { TimerStore } from "../services/TimerStore.js"
import { Count, decodeRows, Int8 } from "./internal/Columns.js"
import * as Folds from "./internal/Folds.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make

  // `claimable_at <= now` is exactly "fireAt <= now and unheld or held since now - 60 or earlier"
  // (inclusive both ways): the lease end is written as the claim's new `claimable_at`. Computed
  // in SQL as BIGINT, so an instant past 2^31 never meets int4. Unnamed on pg: how many timers
  // are due is the skew a generic plan gets wrong (a tenant with a million beside one with none).
  // pg: SKIP LOCKED, so a second sweeper takes the next rows instead of waiting for ours; a row
  // claimed while we looked is re-checked on locking (its new `claimed_at` leaves the fresh walk)
  // and skipped. Two picks, as on SQLite (migration 0007): the never-claimed timers in the
  // claim's order, stopping after `n`, and the lapsed claims; then the first `n` of both. Row
  // locks are not allowed over a UNION, so each pick locks on its own and the union is taken
  // after: up to `n` rows locked and not chosen stay locked only until this statement ends, and a
  // sweeper beside it passes over them for that long, as over any row a claim holds. The lapsed
  // pick orders by `fire_at + 0`, which no index provides, so it is always the range of
  // `timers_claimed` and a sort: ordered by `fire_at`, the planner could walk `timers_pending` in
  // fire order, expecting lapsed claims early, and test every held and unclaimed row on the heap
  // until it found `n`: with none lapsed and the statistics skewed by other tenants' claims (the
  // bench's store cells), 31 ms a pick at 100k timers against 0.05 ms, and 356 ms a claim at 1M.
  // Each pick is a MATERIALIZED CTE and the update finds its rows through the primary key from
  // the result. Written as `WHERE tenant = $t AND … IN (SELECT … LIMIT n FOR UPDATE SKIP
  // LOCKED)`, statistics older than the tenant's backlog (its 10,000 due timers arrived after an
  // ANALYZE that saw none) made the planner scan the tenant's rows as the outer side of a
  // nested-loop semi join and run the pick again, locking anew, for every one of them: 8-14 s a
  // claim with four sweepers at 10,000 due, until one passed the 30 s statement timeout. The
  // tenant reaches the update through `picked`, whose rows are all the caller's; a constant
  // tenant filter there would bring the bad estimate back (with the pick run once, still 300 ms:
  // 10,000 outer rows, each compared with 128).
  const claimPg = dialect.query(TimerRow, "timers")`
    WITH fresh AS MATERIALIZED (
      SELECT tenant, run_id, effect_key, fire_at FROM timers
       WHERE tenant = ${3} AND claimed_at IS NULL AND fire_at <= ${4}
       ORDER BY fire_at, run_id, effect_key
       LIMIT ${5} FOR UPDATE SKIP LOCKED),
    lapsed AS MATERIALIZED (
      SELECT tenant, run_id, effect_key, fire_at FROM timers
       WHERE tenant = ${3} AND claimed_at IS NOT NULL AND claimable_at <= ${4}
       ORDER BY fire_at + 0, run_id, effect_key
       LIMIT ${5} FOR UPDATE SKIP LOCKED),
    picked AS MATERIALIZED (
      SELECT tenant, run_id, effect_key FROM (SELECT * FROM fresh UNION ALL SELECT * FROM lapsed) AS takeable
       ORDER BY fire_at, run_id, effect_key
       LIMIT ${5})
    UPDATE timers SET claimed_at = ${0}, claimable_at = CAST(${1} AS BIGINT) + ${2}
      FROM picked
     WHERE timers.tenant = picked.tenant AND timers.run_id = picked.run_id AND timers.effect_key = picked.effect_key
    RETURNING timers.run_id, timers.effect_key, timers.case_id, timers.step, timers.phase, timers.fire_at`

  // sqlite: one writer runs the whole statement at once; nobody can interleave. Two walks, each
  // over rows it can take (migration 0007): the never-claimed timers in the claim's own order
  // (`claimable_at` is `fire_at` until a first claim), stopping after `n`, and the lapsed claims
  // (`claimable_at <= now` among the claimed), which it sorts. The first `n` of both is the
  // contract's order. One walk of `timers_pending` stepped over every held claim at the queue
  // head, a table lookup each (1.25 ms at 1,000 timers, 4.5 ms at 1,000,000 with 1% held); one
  // range of `claimable_at` read the whole due backlog and sorted it for each batch.
  const claimSqlite = dialect.query(TimerRow, "timers")`
    UPDATE timers SET claimed_at = ${0}, claimable_at = CAST(${1} AS BIGINT) + ${2}
     WHERE tenant = ${3} AND (tenant, run_id, effect_key) IN (
       SELECT tenant, run_id, effect_key FROM (
         SELECT * FROM (
           SELECT tenant, run_id, effect_key, fire_at FROM timers INDEXED BY timers_fresh
            WHERE tenant = ${4} AND claimed_at IS NULL AND fire_at <= ${5}
            ORDER BY fire_at, run_id, effect_key LIMIT ${6})
         UNION ALL
         SELECT * FROM (
           SELECT tenant, run_id, effect_key, fire_at FROM timers INDEXED BY timers_claimed
            WHERE tenant = ${7} AND claimed_at IS NOT NULL AND claimable_at <= ${8}
            ORDER BY fire_at, run_id, effect_key LIMIT ${9}))
        ORDER BY fire_at, run_id, effect_key
        LIMIT ${10})
    RETURNING run_id, effect_key, case_id, step, phase, fire_at`

  const dropTimer = dialect.command({ named: true })`
    DELETE FROM timers WHERE tenant = ${0} AND run_id = ${1} AND effect_key = ${2}`

  // Idempotent by contract (G2): a missing timer is already disarmed, so no row count is owed.
  const disarm = Sql.verb((tenant, run: RunId, effect: EffectKey) => Effect.asVoid(dropTimer(tenant, run, effect)))

  return TimerStore.of({
    arm: (timer) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // First registration stands: a re-arm hits the primary key and `fireAt` never moves.
        // An unclaimed timer is takeable from its fire instant on.
        yield* sql`
          INSERT INTO timers (tenant, run_id, effect_key, case_id, step, phase, fire_at, claimed_at, claimable_at)
          VALUES (${tenant}, ${timer.run}, ${timer.effect}, ${Option.getOrNull(timer.case)}, ${timer.step},
                  ${timer.phase}, ${timer.fireAt}, NULL, ${timer.fireAt})
          ON CONFLICT (tenant, run_id, effect_key) DO NOTHING`
      }).pipe(Sql.orBackend),

    claimDue: Sql.verb((tenant, now: Time.Timestamp, limit: number) => {
      const n = Sql.clampLimit(limit)
      if (n === 0) return Effect.succeed([])
      // In a transaction so that a row that fails to decode rolls the whole claim back: the
      // sound timers beside it are not left held for 60 s by a sweeper that never saw them.
      return Effect.map(
        dialect.write(
          dialect.name === "pg"
            ? claimPg(now, now, CLAIM_LEASE_SECS, tenant, now, n)
            : claimSqlite(now, now, CLAIM_LEASE_SECS, tenant, tenant, now, n, tenant, now, n, n),
        ),
        // RETURNING promises no order; the contract's is fire instant, then run, then effect.
        (rows) => [...rows].sort(byFireOrder).map(toTimer),
      )
    }),

    // The drop carries its form, so a journal seal over the same database folds it (`Folds`).
    disarm: (run, effect) =>
      JournalStore.withForm(disarm(run, effect), {
        form: Folds.timerDrop(dialect.database, run, effect),
        folded: Effect.void,
      }),

    pendingCount: () =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const [row] = yield* sql`SELECT COUNT(*) AS n FROM timers WHERE tenant = ${tenant}`.pipe(
          Effect.flatMap(decodeRows(CountRow, "timers")),
        )
        return row?.n ?? 0
      }).pipe(Sql.orBackend),

    pending: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        // Claimed or not: an operator listing waits sees held timers too.
        const rows = yield* sql`
          SELECT run_id, effect_key, case_id, step, phase, fire_at FROM timers
           WHERE tenant = ${tenant}
           ORDER BY fire_at, run_id, effect_key LIMIT ${n}`.pipe(Effect.flatMap(decodeRows(TimerRow, "timers")))
        return rows.map(toTimer)
      }).pipe(Sql.orBackend),
  })
})

/** TimerStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<TimerStore, never, SqlClient.SqlClient> = Layer.effect(TimerStore, make)

// internal

const TimerRow = Schema.Struct({
  run_id: RunId,
  effect_key: EffectKey,
  case_id: Schema.NullOr(CaseId),
  step: Schema.compose(Int8, StepId),
  phase: Phase,
  fire_at: Schema.compose(Int8, Time.Timestamp),
})
const CountRow = Schema.Struct({ n: Count })

/** The total order of timers, by code point so it never depends on a database collation. */
const byFireOrder = (a: typeof TimerRow.Type, b: typeof TimerRow.Type): number =>
  compare(a.fire_at, b.fire_at) || compare(a.run_id, b.run_id) || compare(a.effect_key, b.effect_key)

const compare = <A extends string | number>(a: A, b: A): number => (a < b ? -1 : a > b ? 1 : 0)

/** Unvalidated: `TimerRow`'s decoder checked every field against the schema `Timer` holds for it. */
const toTimer = (row: typeof TimerRow.Type): Timer =>
  new Timer(
    {
      run: row.run_id,
      case: Option.fromNullable(row.case_id),
      effect: row.effect_key,
      step: row.step,
      phase: row.phase,
      fireAt: row.fire_at,
    },
    true,
  )
