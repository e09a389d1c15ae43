/**
 * The journal's bookkeeping beside the records: admission keys (who holds one, forgetting old
 * ones) and cancellation requests (storing the first, reading it back).
 */
import { Effect, Option } from "effect"
import type * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import type { JournalStore } from "../../services/JournalStore.js"
import { decodeRows } from "../internal/Columns.js"
import { RunRow } from "../internal/JournalRows.js"
import * as Sql from "../internal/Sql.js"
import type { Statements } from "./Statements.js"

export const make = (
  s: Statements,
): Pick<JournalStore["Type"], "admittedAs" | "forgetAdmissions" | "requestCancel" | "cancellation"> => {
  const { sql, now, cancelOf } = s
  return {
    admittedAs: (key) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`SELECT run_id FROM run_admission WHERE tenant = ${tenant} AND key = ${key}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_admission")),
        )
        return Option.map(Option.fromNullable(rows[0]), (r) => r.run_id)
      }).pipe(Sql.orBackend),

    forgetAdmissions: (olderThan) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Inclusive: a key admitted exactly at `olderThan` is freed.
        const freed = yield* sql`
          DELETE FROM run_admission WHERE tenant = ${tenant} AND admitted_at <= ${olderThan}
          RETURNING key`
        return freed.length
      }).pipe(Sql.orBackend),
    requestCancel: (run, actor, reason) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // The first request wins; a later one inserts nothing and reports false.
        const stored = yield* sql`
          INSERT INTO run_cancel (tenant, run_id, actor, reason, requested_at)
          VALUES (${tenant}, ${run}, ${actor}, ${reason}, ${now})
          ON CONFLICT (tenant, run_id) DO NOTHING
          RETURNING run_id`
        return stored.length > 0
      }).pipe(Sql.orBackend),

    cancellation: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* cancelOf(tenant, run)
        return Option.map(
          Option.fromNullable(rows[0]),
          (r): Journal.Cancellation => ({ actor: r.actor, reason: r.reason }),
        )
      }).pipe(Sql.orBackend),
  }
}
