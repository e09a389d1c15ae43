/**
 * No store table is read with parallel workers on PostgreSQL (migration `0008_serial_reads`): a
 * small tenant's read, priced from a large tenant's rows, was split over a Gather whose workers
 * cost ten times the work. The planner is pushed as hard as it goes towards workers (parallel
 * setup and tuples free, no size floor), so a table without the setting plans a Gather here
 * whatever its size; every table of the migrated schema must plan none.
 */
import { SqlClient } from "@effect/sql"
import { describe, inject, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Migrations from "../../src/layers/Migrations.js"
import * as SerialReads from "../../src/layers/migrations/pg/0008_serial_reads.js"
import * as TransparencyLog from "../../src/layers/migrations/pg/0009_transparency_log.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import { assert } from "../support/Assert.js"

const Tables = Schema.Array(Schema.Struct({ name: Schema.String }))
const Plan = Schema.Array(Schema.Struct({ "QUERY PLAN": Schema.String }))

/**
 * Whether the plan of `text` has a Gather, with workers priced at nothing. The settings are
 * `SET LOCAL`, so they end with the transaction, which the EXPLAIN leaves unchanged otherwise.
 */
const gathers = (text: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`SET LOCAL parallel_setup_cost = 0`
        yield* sql`SET LOCAL parallel_tuple_cost = 0`
        yield* sql`SET LOCAL min_parallel_table_scan_size = 0`
        yield* sql`SET LOCAL min_parallel_index_scan_size = 0`
        const plan = yield* Effect.flatMap(sql.unsafe(`EXPLAIN ${text}`), Schema.decodeUnknown(Plan))
        const lines = plan.map((r) => r["QUERY PLAN"]).join("\n")
        return { gathered: /Gather/.test(lines), lines }
      }),
    ),
  )

describe("serial reads (pg)", () => {
  it.effect("every store table plans its reads without parallel workers, however cheap they are made", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* Migrations.run
      const tables = yield* Effect.flatMap(
        sql`SELECT tablename AS name FROM pg_tables
             WHERE schemaname = current_schema() AND tablename <> 'agentplane_migrations'
             ORDER BY 1`,
        Schema.decodeUnknown(Tables),
      )
      // The migration names every table the schema has: a table added later without it fails here.
      assert.deepStrictEqual(
        tables.map((t) => t.name),
        [...SerialReads.TABLES, ...TransparencyLog.TABLES].sort(),
      )
      for (const { name } of tables) {
        const whole = yield* gathers(`SELECT count(*) FROM ${name}`)
        assert.isFalse(whole.gathered, `${name}:\n${whole.lines}`)
      }
      // The read the setting was made for: census's count of a tenant's open cases.
      const census = yield* gathers(`SELECT count(*) FROM cases WHERE tenant = 'a' AND status <> 'closed'`)
      assert.isFalse(census.gathered, census.lines)
    }).pipe(Effect.provide(PgBackend.layerClient({ url: inject("pgUrl") }))),
  )

  it.effect("the push towards workers is strong enough to plan a Gather on a table without the setting", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // A table of this test's own, so the store tables are left as the migration set them.
      yield* sql`CREATE TABLE IF NOT EXISTS serial_reads_probe (tenant TEXT NOT NULL, n BIGINT NOT NULL)`
      const probe = yield* gathers(`SELECT count(*) FROM serial_reads_probe`)
      yield* sql`DROP TABLE serial_reads_probe`
      assert.isTrue(probe.gathered, probe.lines)
    }).pipe(Effect.provide(PgBackend.layerClient({ url: inject("pgUrl") }))),
  )
})
