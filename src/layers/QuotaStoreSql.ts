/**
 * QuotaStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Admission is the one
 * race, settled per dialect inside `Dialect.write`; every other statement is one text for both.
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Option, Schema } from "effect"
import type { RunId } from "../domain/Ids.js"
import * as Quota from "../domain/Quota.js"
import type { Timestamp } from "../domain/Time.js"
import { TooManyRuns } from "../errors/QuotaError.js"
import { Backend } from "../errors/StoreError.js"
import { QuotaStore } from "../services/QuotaStore.js"
import { Count } from "./internal/Columns.js"
import * as Dialect from "./internal/Dialect.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const dialect = yield* Sql.make

  const counted = dialect.query(AdmissionRow, "quota_running", { named: true })`
    SELECT COUNT(*) AS n, COUNT(CASE WHEN run_id = ${0} THEN 1 END) AS mine
      FROM quota_running WHERE tenant = ${1}`

  // First admission stands: a repeat keeps the original `admitted_at`.
  const admit = dialect.command({ named: true })`
    INSERT INTO quota_running (tenant, run_id, admitted_at) VALUES (${0}, ${1}, ${2})
    ON CONFLICT (tenant, run_id) DO NOTHING`

  // Membership, not a tally: freeing a slot twice frees nothing the second time.
  const free = dialect.command({ named: true })`DELETE FROM quota_running WHERE tenant = ${0} AND run_id = ${1}`

  // Lifting an unset halt is a no-op success, so it deletes without checking the count.
  const lift = dialect.command({ named: true })`DELETE FROM quota_halted WHERE tenant = ${0}`

  const halt = dialect.command({ named: true })`
    INSERT INTO quota_halted (tenant, reason) VALUES (${0}, ${1})
    ON CONFLICT (tenant) DO UPDATE SET reason = EXCLUDED.reason
    RETURNING tenant`

  const reasonOf = dialect.query(ReasonRow, "quota_halted", { named: true })`
    SELECT reason FROM quota_halted WHERE tenant = ${0}`

  // One upsert, so concurrent accruals serialise on the row and each adds to the last;
  // saturating in SQL, since two safe amounts may sum past MAX_SAFE_INTEGER.
  const add = dialect.command({ named: true })`
    INSERT INTO quota_spent (tenant, period, tokens, minor_units)
    VALUES (${0}, ${1}, ${2}, ${3})
    ON CONFLICT (tenant, period) DO UPDATE
       SET tokens = ${dialect.least}(quota_spent.tokens + EXCLUDED.tokens, ${Dialect.MAX_SAFE}),
           minor_units = ${dialect.least}(quota_spent.minor_units + EXCLUDED.minor_units, ${Dialect.MAX_SAFE})
    RETURNING period`

  const spentIn = dialect.query(SpentRow, "quota_spent", { named: true })`
    SELECT tokens, minor_units FROM quota_spent WHERE tenant = ${0} AND period = ${1}`

  const runningOf = dialect.query(CountRow, "quota_running", { named: true })`
    SELECT COUNT(*) AS n FROM quota_running WHERE tenant = ${0}`

  return QuotaStore.of({
    reserve: Sql.verb((tenant, run: RunId, limit: Option.Option<number>, at: Timestamp) =>
      dialect.write(
        // Serialises admissions of one tenant until the transaction ends: two admissions insert
        // two different rows, so no row lock would make them wait for each other.
        Effect.zipRight(
          dialect.admissionLock(tenant),
          Option.isNone(limit)
            ? Effect.asVoid(admit(tenant, run, at))
            : // Counted under the lock, so no other admission of this tenant moves the count
              // between this read and the insert.
              Effect.flatMap(counted(run, tenant), ([row]): Effect.Effect<void, SqlError | TooManyRuns> => {
                const running = row?.n ?? 0
                // A run already in keeps its slot (idempotent): it takes no second one.
                if ((row?.mine ?? 0) > 0) return Effect.void
                if (running >= limit.value) return Effect.fail(new TooManyRuns({ tenant, running }))
                return Effect.asVoid(admit(tenant, run, at))
              }),
        ),
      ),
    ),

    release: Sql.verb((tenant, run: RunId) => Effect.asVoid(free(tenant, run))),

    setHalt: Sql.verb((tenant, reason: Option.Option<string>) =>
      Option.isNone(reason)
        ? Effect.asVoid(lift(tenant))
        : Effect.flatMap(halt(tenant, reason.value), (written) =>
            written === 0 ? Effect.fail(new Backend({ detail: `halt for ${tenant} was not written` })) : Effect.void,
          ),
    ),

    halted: Sql.verb((tenant) =>
      reasonOf(tenant).pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.reason)),
        // A reason is any text: a decode failure here is impossible, and the contract has no Corrupt.
        Effect.catchTag("Corrupt", (e) => Effect.fail(new Backend({ detail: e.detail }))),
      ),
    ),

    accrue: Sql.verb((tenant, period: string, spend: Quota.Spend) =>
      Effect.flatMap(add(tenant, period, spend.tokens, spend.minorUnits), (written) =>
        written === 0
          ? Effect.fail(new Backend({ detail: `accrual for ${tenant}/${period} was not written` }))
          : Effect.void,
      ),
    ),

    spent: Sql.verb((tenant, period: string) =>
      Effect.map(spentIn(tenant, period), ([row]) =>
        row === undefined ? Quota.ZERO : new Quota.Spend({ tokens: row.tokens, minorUnits: row.minor_units }),
      ),
    ),

    running: Sql.verb((tenant) => Effect.map(runningOf(tenant), ([row]) => row?.n ?? 0)),
  })
})

/** QuotaStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<QuotaStore, never, SqlClient.SqlClient> = Layer.effect(QuotaStore, make)

// internal

const AdmissionRow = Schema.Struct({ n: Count, mine: Count })
const ReasonRow = Schema.Struct({ reason: Schema.String })
const CountRow = Schema.Struct({ n: Count })
const SpentRow = Schema.Struct({ tokens: Count, minor_units: Count })
