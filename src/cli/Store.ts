/**
 * `--store`: where the plane keeps its state, and the backend that follows from it (§8.3).
 */
import { Options } from "@effect/cli"
import { Config, type Layer } from "effect"
import type { Backend } from "../errors/StoreError.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import type * as SqlStores from "../layers/SqlStores.js"

export const DEFAULT = "./agentplane.db"

/**
 * One flag for both backends, as the spec writes it: a `postgres://` URL selects PostgreSQL,
 * anything else is a SQLite file. `--database-url` (the issue's name) is an alias of the same
 * flag rather than a second one, so there is never a question of which of two wins.
 * `AGENTPLANE_STORE` is the environment fallback, then `AGENTPLANE_DATABASE_URL`; plain
 * `DATABASE_URL` is deliberately not read, since the tests' PostgreSQL is found through it and a
 * developer's shell would otherwise point `npm start` at it.
 */
export const option: Options.Options<string> = Options.text("store").pipe(
  Options.withAlias("database-url"),
  Options.withDescription(`SQLite file, or a postgres:// URL (env AGENTPLANE_STORE or AGENTPLANE_DATABASE_URL)`),
  Options.withFallbackConfig(
    Config.string("AGENTPLANE_STORE").pipe(Config.orElse(() => Config.string("AGENTPLANE_DATABASE_URL"))),
  ),
  Options.withDefault(DEFAULT),
)

/** Whether `store` names a PostgreSQL database rather than a SQLite file. */
export const isPostgres = (store: string): boolean => /^postgres(ql)?:\/\//i.test(store)

/** Every store on `store`, migrated when the layer is built; the pool or file closes with its scope. */
export const layer = (store: string): Layer.Layer<SqlStores.Stores, Backend> =>
  isPostgres(store) ? PgBackend.layer({ url: store }) : SqliteBackend.layer({ filename: store })

/** `store` fit for a log line: a URL's password replaced by `***`. */
export const show = (store: string): string => {
  if (!isPostgres(store)) return store
  try {
    const url = new URL(store)
    if (url.password !== "") url.password = "***"
    return url.toString()
  } catch {
    return "(unparseable PostgreSQL URL)"
  }
}
