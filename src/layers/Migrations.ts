/**
 * The migration sets, one per dialect with the same ids and names, applied by @effect/sql's
 * Migrator. Applying is idempotent and safe for several processes starting at once.
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { Effect, Layer } from "effect"
import { Backend } from "../errors/StoreError.js"
import * as Sql from "./internal/Sql.js"
import * as PgCaseLayer from "./migrations/pg/0001_case_layer.js"
import * as PgJournal from "./migrations/pg/0002_journal.js"
import * as PgRunPositions from "./migrations/pg/0003_run_positions.js"
import * as PgReadIndexes from "./migrations/pg/0004_read_indexes.js"
import * as PgErasure from "./migrations/pg/0005_erasure.js"
import * as PgElectedWaits from "./migrations/pg/0006_elected_waits.js"
import * as PgFreshTimers from "./migrations/pg/0007_fresh_timers.js"
import * as PgSerialReads from "./migrations/pg/0008_serial_reads.js"
import * as PgTransparencyLog from "./migrations/pg/0009_transparency_log.js"
import * as PgViewReads from "./migrations/pg/0010_view_reads.js"
import * as SqliteCaseLayer from "./migrations/sqlite/0001_case_layer.js"
import * as SqliteJournal from "./migrations/sqlite/0002_journal.js"
import * as SqliteRunPositions from "./migrations/sqlite/0003_run_positions.js"
import * as SqliteReadIndexes from "./migrations/sqlite/0004_read_indexes.js"
import * as SqliteErasure from "./migrations/sqlite/0005_erasure.js"
import * as SqliteElectedWaits from "./migrations/sqlite/0006_elected_waits.js"
import * as SqliteFreshTimers from "./migrations/sqlite/0007_fresh_timers.js"
import * as SqliteSerialReads from "./migrations/sqlite/0008_serial_reads.js"
import * as SqliteTransparencyLog from "./migrations/sqlite/0009_transparency_log.js"
import * as SqliteViewReads from "./migrations/sqlite/0010_view_reads.js"

/** Migration id (`0001_case_layer`) → its statements, for PostgreSQL. */
export const pg: Readonly<Record<string, ReadonlyArray<string>>> = {
  "0001_case_layer": PgCaseLayer.statements,
  "0002_journal": PgJournal.statements,
  "0003_run_positions": PgRunPositions.statements,
  "0004_read_indexes": PgReadIndexes.statements,
  "0005_erasure": PgErasure.statements,
  "0006_elected_waits": PgElectedWaits.statements,
  "0007_fresh_timers": PgFreshTimers.statements,
  "0008_serial_reads": PgSerialReads.statements,
  "0009_transparency_log": PgTransparencyLog.statements,
  "0010_view_reads": PgViewReads.statements,
}

/** Migration id → its statements, for SQLite; the ids are pg's, one for one. */
export const sqlite: Readonly<Record<string, ReadonlyArray<string>>> = {
  "0001_case_layer": SqliteCaseLayer.statements,
  "0002_journal": SqliteJournal.statements,
  "0003_run_positions": SqliteRunPositions.statements,
  "0004_read_indexes": SqliteReadIndexes.statements,
  "0005_erasure": SqliteErasure.statements,
  "0006_elected_waits": SqliteElectedWaits.statements,
  "0007_fresh_timers": SqliteFreshTimers.statements,
  "0008_serial_reads": SqliteSerialReads.statements,
  "0009_transparency_log": SqliteTransparencyLog.statements,
  "0010_view_reads": SqliteViewReads.statements,
}

const TABLE = "agentplane_migrations"

const loader = (set: Readonly<Record<string, ReadonlyArray<string>>>) =>
  Migrator.fromRecord(
    Object.fromEntries(
      Object.entries(set).map(([id, statements]) => [
        id,
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.forEach(statements, (statement) => sql.unsafe(statement), { discard: true }),
        ),
      ]),
    ),
  )

/** Applies every pending migration of the client's dialect; answers how many it applied (0: none was pending). */
export const run: Effect.Effect<number, Backend, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make
  const migrate = Migrator.make({})
  const applied = yield* sql.onDialectOrElse({
    // Several instances may start together: a transaction-scoped advisory lock lets one migrate
    // while the others wait, then find nothing left to do. The bookkeeping table is created
    // here because the Migrator probes for it with a failing statement, which would abort the
    // surrounding transaction.
    pg: () =>
      dialect.write(
        Effect.gen(function* () {
          // Longer bounds than a request's: a sibling's migration may hold the lock a while, and
          // a migration's DDL may run long; both still end rather than hang start-up.
          yield* sql`SET LOCAL lock_timeout = '60s'`
          yield* sql`SET LOCAL statement_timeout = '10min'`
          yield* sql`SELECT pg_advisory_xact_lock(hashtext('agentplane.migrations'))`
          yield* sql`CREATE TABLE IF NOT EXISTS ${sql(TABLE)} (
            migration_id integer PRIMARY KEY,
            created_at timestamp with time zone NOT NULL DEFAULT now(),
            name text NOT NULL)`
          return yield* migrate({ loader: loader(pg), table: TABLE })
        }),
      ),
    // A second process on the file waits for the write lock rather than migrating alongside.
    orElse: () => dialect.write(migrate({ loader: loader(sqlite), table: TABLE })),
  })
  return applied.length
}).pipe(
  Effect.catchAllDefect((defect) => Effect.fail(new Backend({ detail: `migration failed: ${String(defect)}` }))),
  Effect.catchTag("MigrationError", (e) => Effect.fail(new Backend({ detail: `migration failed: ${e.message}` }))),
  Sql.orBackend,
)

/** Runs the migrations when the layer is built. */
export const layer: Layer.Layer<never, Backend, SqlClient.SqlClient> = Layer.effectDiscard(run)
