/**
 * The journal's lease verbs: acquire (one or many runs), renew, release, and the runs whose
 * lease lapsed with an owner on it, for recovery.
 */
import { Effect } from "effect"
import type * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import { LeaseHeld, LeaseNotHeld } from "../../errors/StoreError.js"
import type { JournalStore } from "../../services/JournalStore.js"
import { decodeRows } from "../internal/Columns.js"
import { GrantedRow, RunRow } from "../internal/JournalRows.js"
import * as Sql from "../internal/Sql.js"
import { ACQUIRE_CHUNK, wholeTtl } from "./Build.js"
import type { Statements } from "./Statements.js"

export const make = (
  s: Statements,
): Pick<JournalStore["Type"], "acquire" | "acquireMany" | "renew" | "releaseLease" | "abandonedRuns"> => {
  const { sql, dialect, now, notWritten, leaseOf, takeLease, heldLease, renewLease, releaseHeld } = s
  return {
    acquire: (run, owner, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const ttl = wholeTtl(ttlSecs)
        return yield* dialect.write(
          Effect.gen(function* () {
            const [row] = yield* takeLease(tenant, run, owner, ttl)
            if (row !== undefined) return yield* leaseOf(run, row)
            // The upsert left the row locked (pg), so this reads the lease that refused us.
            const [held] = yield* heldLease(tenant, run)
            if (held === undefined) return yield* notWritten(`lease of ${run}`)
            return yield* new LeaseHeld({
              run,
              owner: held.owner,
              epoch: held.epoch,
              remainingSecs: Math.max(0, held.expires_at - held.now),
            })
          }),
        )
      }).pipe(Sql.orBackend),

    acquireMany: (runs, owner, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const ttl = wholeTtl(ttlSecs)
        // Sorted and distinct: a row named twice would be upserted twice in one statement (pg
        // refuses that), and on pg two callers with overlapping sets lock the rows they share in
        // the same order, so neither waits on a row the other will only reach after it.
        const distinct = [...new Set(runs)].sort()
        if (distinct.length === 0) return []
        const granted: Array<Journal.Lease> = []
        for (let i = 0; i < distinct.length; i += ACQUIRE_CHUNK) {
          const chunk = distinct.slice(i, i + ACQUIRE_CHUNK)
          // The upsert of `acquire`, one row per run: each conflicting row's WHERE is re-checked
          // on the version a concurrent winner committed, so each run is granted once.
          const rows = yield* sql`
            INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at)
            VALUES ${sql.join(",", false)(chunk.map((run) => sql`(${tenant}, ${run}, ${owner}, 1, ${now} + ${ttl})`))}
            ON CONFLICT (tenant, run_id) DO UPDATE
               SET owner = EXCLUDED.owner, epoch = run_lease.epoch + 1, expires_at = EXCLUDED.expires_at
             WHERE run_lease.owner = '' OR run_lease.expires_at <= ${now}
            RETURNING run_id, owner, epoch, expires_at`.pipe(Effect.flatMap(decodeRows(GrantedRow, "run_lease")))
          for (const row of rows) granted.push(yield* leaseOf(row.run_id, row))
        }
        return granted
      }).pipe(Sql.orBackend),

    renew: (run, owner, epoch, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const [row] = yield* renewLease(tenant, run, owner, epoch, wholeTtl(ttlSecs))
        if (row === undefined) return yield* new LeaseNotHeld({ run, epoch })
        return yield* leaseOf(run, row)
      }).pipe(Sql.orBackend),

    releaseLease: (run, epoch) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // A stale epoch or a repeat matches no row, which the contract makes a silent success, so
        // the count is not an error here.
        yield* releaseHeld(tenant, run, epoch)
      }).pipe(Sql.orBackend),

    abandonedRuns: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT run_id FROM run_lease
           WHERE tenant = ${tenant} AND owner <> '' AND expires_at <= ${now}
           ORDER BY expires_at, run_id LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_lease")),
        )
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),
  }
}
