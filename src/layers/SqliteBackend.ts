/**
 * The embedded default: every store on one SQLite file, migrated when the layer starts.
 */
import type { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Config, Effect, Layer } from "effect"
import { Backend } from "../errors/StoreError.js"
import * as Sql from "./internal/Sql.js"
import * as Migrations from "./Migrations.js"
import * as SqlStores from "./SqlStores.js"

export interface Options {
  /** The database file; created when missing. `:memory:` works for throwaway use. */
  readonly filename: string
}

/**
 * The SQLite client with the settings the stores rely on: foreign keys enforced (off by default
 * in SQLite, and `NotFound` for a missing parent comes from them) and a busy timeout, so a
 * second process on the file (a CLI sweep beside the server) waits for the lock instead of failing.
 */
export const layerClient = (options: Options): Layer.Layer<SqlClient.SqlClient, Backend> => {
  const client = SqliteClient.layer({ filename: options.filename })
  const pragmas = Layer.effectDiscard(
    Effect.flatMap(SqliteClient.SqliteClient, (sql) =>
      Effect.zipRight(sql`PRAGMA foreign_keys = ON`, sql`PRAGMA busy_timeout = 5000`),
    ).pipe(Sql.orBackend),
  )
  return Layer.provideMerge(pragmas, client).pipe(
    Layer.catchAll((e) => Layer.fail(e instanceof Backend ? e : new Backend({ detail: String(e) }))),
  )
}

/** Every store on the SQLite file `options.filename`, migrated. */
export const layer = (options: Options): Layer.Layer<SqlStores.Stores, Backend> =>
  SqlStores.layer.pipe(Layer.provide(Migrations.layer), Layer.provide(layerClient(options)))

/** As `layer`, reading the filename from `AGENTPLANE_STORE` (default `./agentplane.db`). */
export const layerConfig: Layer.Layer<SqlStores.Stores, Backend> = Layer.unwrapEffect(
  Config.string("AGENTPLANE_STORE").pipe(
    Config.withDefault("./agentplane.db"),
    Effect.map((filename) => layer({ filename })),
    Effect.mapError((e) => new Backend({ detail: `configuration: ${e.message}` })),
  ),
)
