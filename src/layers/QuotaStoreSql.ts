/**
 * QuotaStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Admission is the one
 * race, settled per dialect inside `Dialect.write`; every other statement is one text for both.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import * as Quota from "../domain/Quota.js"
import { Tenant } from "../domain/Tenant.js"
import { TooManyRuns } from "../errors/QuotaError.js"
import { Backend } from "../errors/StoreError.js"
import { QuotaStore } from "../services/QuotaStore.js"
import { Count, decodeRows } from "./internal/Columns.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make
  const least = sql.literal(dialect.least)
  // Written as a literal: better-sqlite3 may bind a large number as a REAL.
  const maxSafe = sql.literal(String(Number.MAX_SAFE_INTEGER))

  /**
   * Serialises admissions of one tenant until the transaction ends. Two admissions insert two
   * different rows, so no row lock would make them wait for each other (`Dialect.admissionLock`).
   */
  const admissionLock = dialect.admissionLock

  return QuotaStore.of({
    reserve: (run, limit, at) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        yield* dialect.write(
          Effect.gen(function* () {
            yield* admissionLock(tenant)
            if (Option.isSome(limit)) {
              // Counted under the lock, so no other admission of this tenant moves the count
              // between this read and the insert below.
              const [row] = yield* sql`
                SELECT COUNT(*) AS n, COUNT(CASE WHEN run_id = ${run} THEN 1 END) AS mine
                  FROM quota_running WHERE tenant = ${tenant}`.pipe(
                Effect.flatMap(decodeRows(AdmissionRow, "quota_running")),
              )
              const running = row?.n ?? 0
              // A run already in keeps its slot (idempotent): it takes no second one.
              if ((row?.mine ?? 0) > 0) return
              if (running >= limit.value) return yield* new TooManyRuns({ tenant, running })
            }
            // First admission stands: a repeat keeps the original `admitted_at`.
            yield* sql`
              INSERT INTO quota_running (tenant, run_id, admitted_at) VALUES (${tenant}, ${run}, ${at})
              ON CONFLICT (tenant, run_id) DO NOTHING`
          }),
        )
      }).pipe(Sql.orBackend),

    release: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Membership, not a tally: freeing a slot twice frees nothing the second time.
        yield* sql`DELETE FROM quota_running WHERE tenant = ${tenant} AND run_id = ${run}`
      }).pipe(Sql.orBackend),

    setHalt: (reason) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        if (Option.isNone(reason)) {
          // Lifting an unset halt is a no-op success, so it deletes without checking the count.
          yield* sql`DELETE FROM quota_halted WHERE tenant = ${tenant}`
          return
        }
        const written = yield* sql`
          INSERT INTO quota_halted (tenant, reason) VALUES (${tenant}, ${reason.value})
          ON CONFLICT (tenant) DO UPDATE SET reason = EXCLUDED.reason
          RETURNING tenant`
        if (written.length === 0) return yield* new Backend({ detail: `halt for ${tenant} was not written` })
      }).pipe(Sql.orBackend),

    halted: () =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`SELECT reason FROM quota_halted WHERE tenant = ${tenant}`.pipe(
          Effect.flatMap(decodeRows(ReasonRow, "quota_halted")),
        )
        return Option.map(Option.fromNullable(rows[0]), (r) => r.reason)
      }).pipe(
        // A reason is any text: a decode failure here is impossible, and the contract has no Corrupt.
        Effect.catchTag("Corrupt", (e) => Effect.fail(new Backend({ detail: e.detail }))),
        Sql.orBackend,
      ),

    accrue: (period, spend) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // One upsert, so concurrent accruals serialise on the row and each adds to the last;
        // saturating in SQL, since two safe amounts may sum past MAX_SAFE_INTEGER.
        const written = yield* sql`
          INSERT INTO quota_spent (tenant, period, tokens, minor_units)
          VALUES (${tenant}, ${period}, ${spend.tokens}, ${spend.minorUnits})
          ON CONFLICT (tenant, period) DO UPDATE
             SET tokens = ${least}(quota_spent.tokens + EXCLUDED.tokens, ${maxSafe}),
                 minor_units = ${least}(quota_spent.minor_units + EXCLUDED.minor_units, ${maxSafe})
          RETURNING period`
        if (written.length === 0)
          return yield* new Backend({ detail: `accrual for ${tenant}/${period} was not written` })
      }).pipe(Sql.orBackend),

    spent: (period) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT tokens, minor_units FROM quota_spent WHERE tenant = ${tenant} AND period = ${period}`.pipe(
          Effect.flatMap(decodeRows(SpentRow, "quota_spent")),
        )
        const row = rows[0]
        if (row === undefined) return Quota.ZERO
        return new Quota.Spend({ tokens: row.tokens, minorUnits: row.minor_units })
      }).pipe(Sql.orBackend),

    running: () =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const [row] = yield* sql`SELECT COUNT(*) AS n FROM quota_running WHERE tenant = ${tenant}`.pipe(
          Effect.flatMap(decodeRows(CountRow, "quota_running")),
        )
        return row?.n ?? 0
      }).pipe(Sql.orBackend),
  })
})

/** QuotaStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<QuotaStore, never, SqlClient.SqlClient> = Layer.effect(QuotaStore, make)

// internal

const AdmissionRow = Schema.Struct({ n: Count, mine: Count })
const ReasonRow = Schema.Struct({ reason: Schema.String })
const CountRow = Schema.Struct({ n: Count })
const SpentRow = Schema.Struct({ tokens: Count, minor_units: Count })
