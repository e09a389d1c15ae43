/**
 * The two migration sets stay parallel: the same ids, and live schemas with the same tables and
 * indexes, so a diff between dialects shows only real differences.
 */
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, inject, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Migrations from "../src/layers/Migrations.js"
import * as PgBackend from "../src/layers/PgBackend.js"
import * as SqliteBackend from "../src/layers/SqliteBackend.js"
import { assert } from "./support/Assert.js"

const Named = Schema.Array(Schema.Struct({ kind: Schema.String, name: Schema.String }))

/** Tables and indexes of the migrated schema, as `kind:name`, sorted; primary-key indexes left out. */
const liveSchema = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* Migrations.run
  // Twice: applying is idempotent.
  yield* Migrations.run
  const rows = yield* sql.onDialectOrElse({
    pg: () => sql`
      SELECT 'table' AS kind, tablename AS name FROM pg_tables WHERE schemaname = current_schema()
      UNION ALL
      SELECT 'index' AS kind, indexname AS name FROM pg_indexes
       WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey'`,
    orElse: () => sql`
      SELECT type AS kind, name FROM sqlite_master
       WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'`,
  })
  const named = yield* Schema.decodeUnknown(Named)(rows)
  return named.map((r) => `${r.kind}:${r.name}`).sort()
})

describe("migrations", () => {
  it("both dialects have the same migration ids, in the same order", () => {
    assert.deepStrictEqual(Object.keys(Migrations.pg), Object.keys(Migrations.sqlite))
    for (const id of Object.keys(Migrations.pg)) assert.match(id, /^\d{4}_[a-z_]+$/)
  })

  it.effect("both live schemas have the same tables and indexes", () =>
    Effect.gen(function* () {
      const filename = join(tmpdir(), `agentplane-migrations-${randomUUID()}.db`)
      const sqlite = yield* liveSchema.pipe(Effect.provide(SqliteBackend.layerClient({ filename })))
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${filename}${suffix}`, { force: true })
      const pg = yield* liveSchema.pipe(Effect.provide(PgBackend.layerClient({ url: inject("pgUrl") })))
      assert.deepStrictEqual(sqlite, pg)
      assert.include(pg, "index:case_correlation_open")
      // Keys that order a read compare in byte order on pg, as SQLite compares them, whatever the
      // database's locale (the test clusters are C-collated, so only the declaration can be checked).
      const collations = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          Migrations.run,
          sql`
            SELECT table_name || '.' || column_name AS name FROM information_schema.columns
             WHERE table_schema = current_schema() AND collation_name = 'C'
             ORDER BY 1`,
        ),
      ).pipe(Effect.provide(PgBackend.layerClient({ url: inject("pgUrl") })))
      assert.deepStrictEqual(
        collations.map((r) => r.name),
        ["batch_items.item_key", "case_deadlines.name", "inbound_correlation.event_id", "inbound_events.event_id"],
      )
      assert.include(pg, "table:quota_spent")
    }),
  )
})
