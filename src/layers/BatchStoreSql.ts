/**
 * BatchStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Every statement is
 * one text for both (the capped sum is `Dialect`'s); the reservation race is settled by the
 * primary key, and the loser reads the winner's row back.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Exit, Layer, Option, Schema } from "effect"
import { BatchCensus, detailOf, fromStored, ItemRecord, OutcomeTag, tagOf } from "../domain/Batch.js"
import { RunId } from "../domain/Ids.js"
import * as Quota from "../domain/Quota.js"
import { Tenant } from "../domain/Tenant.js"
import { Backend, BatchPlanChanged, Corrupt, NotFound } from "../errors/StoreError.js"
import { BatchStore } from "../services/BatchStore.js"
import { Bool, Count, decodeRows } from "./internal/Columns.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make
  const cappedSum = (column: "tokens" | "minor") => sql.literal(dialect.cappedSum(column))

  /**
   * The primary key arbitrates: a repeat inserts nothing, so the first run and its journal stay
   * the item's, and no effect is performed twice under a second run. A fresh item comes back from
   * the insert itself; an empty answer means it was there already (or a concurrent reserver's
   * insert won, which the ON CONFLICT waited for), and `selectItem` reads what stands.
   */
  const insertItem = dialect.query(ItemRow, "batch_items", { named: true })`
    INSERT INTO batch_items (tenant, batch_id, item_key, run_id)
    VALUES (${0}, ${1}, ${2}, ${3})
    ON CONFLICT (tenant, batch_id, item_key) DO NOTHING
    RETURNING item_key, run_id, outcome, detail, tokens, minor`

  const recordItem = dialect.command({ named: true })`
    UPDATE batch_items
       SET outcome = ${0}, detail = ${1}, tokens = ${2}, minor = ${3}
     WHERE tenant = ${4} AND batch_id = ${5} AND item_key = ${6}
    RETURNING item_key`

  const selectItem = dialect.query(ItemRow, "batch_items", { named: true })`
    SELECT item_key, run_id, outcome, detail, tokens, minor FROM batch_items
     WHERE tenant = ${0} AND batch_id = ${1} AND item_key = ${2}`

  return BatchStore.of({
    open: (id, planDigest) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const [stored] = yield* dialect.write(
          Effect.gen(function* () {
            yield* sql`
              INSERT INTO batches (tenant, batch_id, plan_digest) VALUES (${tenant}, ${id}, ${planDigest})
              ON CONFLICT (tenant, batch_id) DO NOTHING`
            // Whichever open won the insert froze the plan: read back what stands, never what we offered.
            return yield* sql`
              SELECT plan_digest FROM batches WHERE tenant = ${tenant} AND batch_id = ${id}`.pipe(
              Effect.flatMap(decodeRows(DigestRow, "batches")),
            )
          }),
        )
        if (stored === undefined) return yield* new Backend({ detail: `batch ${id} vanished after its insert` })
        if (stored.plan_digest !== planDigest) {
          return yield* new BatchPlanChanged({ batch: id, stored: stored.plan_digest, offered: planDigest })
        }
      }).pipe(textOnly, Sql.orBackend),

    planDigest: (id) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT plan_digest FROM batches WHERE tenant = ${tenant} AND batch_id = ${id}`.pipe(
          Effect.flatMap(decodeRows(DigestRow, "batches")),
        )
        return Option.map(Option.fromNullable(rows[0]), (r) => r.plan_digest)
      }).pipe(textOnly, Sql.orBackend),

    markExhausted: (id) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // The one bit that lets a batch read as finished: a mark that landed nowhere must say so.
        const written = yield* sql`
          UPDATE batches SET exhausted = TRUE WHERE tenant = ${tenant} AND batch_id = ${id}
          RETURNING batch_id`
        if (written.length === 0) return yield* new NotFound({ what: id })
      }).pipe(Sql.orBackend),

    isExhausted: (id) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT exhausted FROM batches WHERE tenant = ${tenant} AND batch_id = ${id}`.pipe(
          Effect.flatMap(decodeRows(ExhaustedRow, "batches")),
        )
        return rows[0]?.exhausted ?? false
      }).pipe(Sql.orBackend),

    reserve: Sql.verb((tenant, batch: string, key: string, run: RunId) => {
      const stands = (rows: ReadonlyArray<typeof ItemRow.Type>): Effect.Effect<ItemRecord, Backend | Corrupt> => {
        const row = rows[0]
        return row === undefined
          ? Effect.fail(new Backend({ detail: `item ${batch}/${key} vanished after its insert` }))
          : toItem(row)
      }
      return insertItem(tenant, batch, key, run).pipe(
        // The foreign key is the existence check for the batch, inside the insert itself.
        Sql.catchSql(Sql.isForeignKeyViolation, () => Effect.fail(new NotFound({ what: batch }))),
        Effect.flatMap((fresh) =>
          fresh.length > 0 ? stands(fresh) : Effect.flatMap(selectItem(tenant, batch, key), stands),
        ),
      )
    }),

    record: Sql.verb((tenant, batch: string, key: string, outcome: Parameters<typeof tagOf>[0], spend: Quota.Spend) =>
      // Overwrites, never adds: a resumed item reports its whole spend again.
      Effect.flatMap(
        recordItem(
          tagOf(outcome),
          Option.getOrNull(detailOf(outcome)),
          spend.tokens,
          spend.minorUnits,
          tenant,
          batch,
          key,
        ),
        (written) => (written === 0 ? Effect.fail(new NotFound({ what: `${batch}/${key}` })) : Effect.void),
      ),
    ),

    cursor: (batch) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // The first unsettled key (none, suspended, exhausted) holds the cursor behind it, or a
        // resume would step over outstanding work; strictly below it, since it is itself unsettled.
        const rows = yield* sql`
          SELECT CASE
                   WHEN f.first_open IS NULL THEN
                     (SELECT MAX(item_key) FROM batch_items WHERE tenant = ${tenant} AND batch_id = ${batch})
                   ELSE
                     (SELECT MAX(item_key) FROM batch_items
                       WHERE tenant = ${tenant} AND batch_id = ${batch} AND item_key < f.first_open)
                 END AS cursor
            FROM (SELECT MIN(item_key) AS first_open FROM batch_items
                   WHERE tenant = ${tenant} AND batch_id = ${batch}
                     -- Named by what settles an item, so an unreadable outcome holds the cursor back
                     -- rather than passing for settled (census reports it as Corrupt).
                     AND (outcome IS NULL OR outcome NOT IN ('succeeded', 'failed', 'quarantined'))) f`.pipe(
          Effect.flatMap(decodeRows(CursorRow, "batch_items")),
        )
        return Option.flatMap(Option.fromNullable(rows[0]), (r) => r.cursor)
      }).pipe(textOnly, Sql.orBackend),

    census: (batch) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Counted and summed in SQL, never from a limited list; each group's sum is capped at
        // MAX_SAFE_INTEGER in SQL so the decode sees a safe integer, and the groups add saturating.
        const groups = yield* sql`
          SELECT outcome, COUNT(*) AS n,
                 ${cappedSum("tokens")} AS tokens,
                 ${cappedSum("minor")} AS minor
            FROM batch_items WHERE tenant = ${tenant} AND batch_id = ${batch}
           GROUP BY outcome`.pipe(Effect.flatMap(decodeRows(CensusRow, "batch_items")))
        const count = (tag: OutcomeTag | null) => groups.find((g) => g.outcome === tag)?.n ?? 0
        return new BatchCensus({
          succeeded: count("succeeded"),
          failed: count("failed"),
          quarantined: count("quarantined"),
          suspended: count("suspended"),
          exhausted: count("exhausted"),
          inFlight: count(null),
          spend: groups.reduce(
            (sum, g) => Quota.add(sum, new Quota.Spend({ tokens: g.tokens, minorUnits: g.minor })),
            Quota.ZERO,
          ),
        })
      }).pipe(Sql.orBackend),

    items: (batch, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        // The key is the last column of the primary key, so this order is total.
        return yield* sql`
          SELECT item_key, run_id, outcome, detail, tokens, minor FROM batch_items
           WHERE tenant = ${tenant} AND batch_id = ${batch}
           ORDER BY item_key ASC LIMIT ${n}`.pipe(
          Effect.flatMap(decodeRows(ItemRow, "batch_items")),
          Effect.flatMap((rows) => Effect.forEach(rows, toItem)),
        )
      }).pipe(Sql.orBackend),
  })
})

/** BatchStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<BatchStore, never, SqlClient.SqlClient> = Layer.effect(BatchStore, make)

// internal

const DigestRow = Schema.Struct({ plan_digest: Schema.String })
const ExhaustedRow = Schema.Struct({ exhausted: Bool })
const CursorRow = Schema.Struct({ cursor: Schema.OptionFromNullOr(Schema.String) })
// An unknown outcome string fails here: decoded to null it would count as in flight forever.
const ItemRow = Schema.Struct({
  item_key: Schema.String,
  run_id: RunId,
  outcome: Schema.NullOr(OutcomeTag),
  detail: Schema.NullOr(Schema.String),
  // Every check Quota.Amount makes (Int8 already bounds to safe integers), so `toItem` builds its records unvalidated.
  tokens: Schema.compose(Count, Quota.Amount),
  minor: Schema.compose(Count, Quota.Amount),
})
const CensusRow = Schema.Struct({ outcome: Schema.NullOr(OutcomeTag), n: Count, tokens: Count, minor: Count })

/** For reads of text columns only, which cannot fail to decode: the contract names no `Corrupt` there. */
const textOnly = <A, E, R>(effect: Effect.Effect<A, E | Corrupt, R>): Effect.Effect<A, E | Backend, R> =>
  Effect.catchIf(
    effect,
    (e): e is Corrupt => e instanceof Corrupt,
    (e) => Effect.fail(new Backend({ detail: e.detail })),
  ) as Effect.Effect<A, E | Backend, R>

const toItem = (row: typeof ItemRow.Type): Exit.Exit<ItemRecord, Corrupt> => {
  const outcome =
    row.outcome === null
      ? Either.right(Option.none())
      : Either.map(fromStored(row.outcome, Option.fromNullable(row.detail)), Option.some)
  if (Either.isLeft(outcome)) return Exit.fail(new Corrupt({ detail: `batch_items: ${outcome.left}`, seq: 0 }))
  // Every field was checked by `ItemRow`'s decoder (built once) against the same schemas the
  // classes hold, and the outcome was built by `fromStored`: validating again on construction
  // was a tenth of the whole verb's CPU on SQLite.
  return Exit.succeed(
    new ItemRecord(
      {
        key: row.item_key,
        run: row.run_id,
        outcome: outcome.right,
        spend: new Quota.Spend({ tokens: row.tokens, minorUnits: row.minor }, true),
      },
      true,
    ),
  )
}
