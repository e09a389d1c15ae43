/**
 * `--store`: where the plane keeps its state, and the backend that follows from it (§8.3).
 */
import { Options } from "@effect/cli"
import type { SqlClient } from "@effect/sql"
import { Config, ConfigError, Duration, Either, Layer, Option, Schema } from "effect"
import type { Backend } from "../errors/StoreError.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import type * as Stores from "../services/Stores.js"

export const DEFAULT = "./agentplane.db"

/**
 * One flag for both backends, as the spec writes it: a `postgres://` URL selects PostgreSQL,
 * anything else is a SQLite file. `--database-url` (the issue's name) is an alias of the same
 * flag rather than a second one, so there is never a question of which of two wins.
 * `AGENTPLANE_STORE` is the environment fallback, or `AGENTPLANE_DATABASE_URL`; both set to
 * different stores is refused rather than one silently winning (an image's `AGENTPLANE_STORE`
 * would otherwise keep a deploy on SQLite while its operator believes it on PostgreSQL). Plain
 * `DATABASE_URL` is deliberately not read, since the tests' PostgreSQL is found through it and a
 * developer's shell would otherwise point `npm start` at it.
 */
export const option: Options.Options<string> = Options.text("store").pipe(
  Options.withAlias("database-url"),
  Options.withDescription(
    `SQLite file, or a postgres:// URL (env AGENTPLANE_STORE or AGENTPLANE_DATABASE_URL); default ${DEFAULT}`,
  ),
  Options.withFallbackConfig(
    Config.all([
      Config.option(Config.string("AGENTPLANE_STORE")),
      Config.option(Config.string("AGENTPLANE_DATABASE_URL")),
    ]).pipe(
      Config.mapOrFail(([store, url]) =>
        Option.isSome(store) && Option.isSome(url) && store.value !== url.value
          ? Either.left(
              ConfigError.InvalidData(
                ["AGENTPLANE_STORE"],
                `${show(store.value)} differs from AGENTPLANE_DATABASE_URL ${show(url.value)}; set one of the two`,
              ),
            )
          : Option.match(
              Option.orElse(store, () => url),
              {
                // Missing, not invalid: the flag's default applies.
                onNone: () =>
                  Either.left(
                    ConfigError.MissingData([], "neither AGENTPLANE_STORE nor AGENTPLANE_DATABASE_URL is set"),
                  ),
                onSome: Either.right,
              },
            ),
      ),
    ),
  ),
  Options.withDefault(DEFAULT),
)

/** Whether `store` names a PostgreSQL database rather than a SQLite file. */
export const isPostgres = (store: string): boolean => /^postgres(ql)?:\/\//i.test(store)

/**
 * `store` names no durable store the plane can open; `store` is as `show` writes it (a URL's
 * password masked), `detail` says why and what to give instead.
 */
export class StoreInvalid extends Schema.TaggedError<StoreInvalid>()("StoreInvalid", {
  store: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `store ${JSON.stringify(this.store)} (--store, AGENTPLANE_STORE or AGENTPLANE_DATABASE_URL): ${this.detail}`
  }
}

/**
 * `store` when it names a durable store, else why not. SQLite takes an empty name as a temporary
 * database and `:memory:` as one in memory, both gone when the process exits: a server that
 * acknowledged work on either loses it on restart, so neither is ever taken. A URL of any scheme
 * but `postgres://` would otherwise become a SQLite file of that odd name, so it is refused too.
 */
export const check = (store: string): Either.Either<string, StoreInvalid> => {
  const refuse = (detail: string) => Either.left(new StoreInvalid({ store: show(store), detail }))
  const give = `give a SQLite file path (default ${DEFAULT}) or a postgres:// URL`
  if (store.trim() === "") {
    return refuse(`is empty, which SQLite would take as a temporary database deleted on exit; ${give}`)
  }
  if (store.trim() !== store) return refuse(`has leading or trailing whitespace; ${give}`)
  if (hasControl(store)) return refuse(`contains a control character; ${give}`)
  if (store.toLowerCase() === ":memory:") {
    return refuse(`is SQLite's in-memory database, lost when the process exits; ${give}`)
  }
  if (isPostgres(store)) {
    return URL.canParse(store) ? Either.right(store) : refuse("is not a valid postgres:// URL")
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(store)?.[1]?.toLowerCase()
  if (scheme === "file" || scheme === "sqlite") {
    // SQLite's URI form can ask for a memory database (`mode=memory`); only a path is taken.
    return refuse(`is a ${scheme}: URL; give the SQLite file as a plain path (e.g. ${DEFAULT})`)
  }
  if (scheme !== undefined && /^[a-z][a-z0-9+.-]*:\/\//i.test(store)) {
    return refuse(`is a ${scheme}:// URL, and the plane has no ${scheme} backend; ${give}`)
  }
  return Either.right(store)
}

/** The backend timeouts in whole seconds, each absent unless its flag is given. */
export interface Timeouts {
  readonly statementTimeout: Option.Option<number>
  readonly lockTimeout: Option.Option<number>
  readonly acquireTimeout: Option.Option<number>
  readonly connectTimeout: Option.Option<number>
  readonly busyTimeout: Option.Option<number>
}

/**
 * A timeout flag in seconds. Without it the backend layer reads its own environment variable
 * (whole seconds too, `Seconds.fromEnv`), then its default; the flag wins over both.
 */
// At least one second: on PostgreSQL a timeout of 0 means none at all, which would fail open.
const Seconds = Schema.Int.pipe(
  Schema.greaterThanOrEqualTo(1, { message: () => "a timeout is a whole number of seconds, at least 1" }),
)

const timeout = (flag: string, variable: string, what: string) =>
  Options.integer(flag).pipe(
    Options.withSchema(Seconds),
    Options.withDescription(`${what}, in whole seconds (env ${variable}, whole seconds too)`),
    Options.optional,
  )

/** `--statement-timeout`, `--lock-timeout`, `--acquire-timeout`, `--connect-timeout` (PostgreSQL) and `--busy-timeout` (SQLite). */
export const timeoutOptions: Options.Options<Timeouts> = Options.all({
  statementTimeout: timeout(
    "statement-timeout",
    "AGENTPLANE_PG_STATEMENT_TIMEOUT",
    "PostgreSQL: longest a statement may run (default 30)",
  ),
  lockTimeout: timeout("lock-timeout", "AGENTPLANE_PG_LOCK_TIMEOUT", "PostgreSQL: longest a lock wait (default 5)"),
  acquireTimeout: timeout(
    "acquire-timeout",
    "AGENTPLANE_PG_ACQUIRE_TIMEOUT",
    "PostgreSQL: longest wait for a pool connection (default 10)",
  ),
  connectTimeout: timeout(
    "connect-timeout",
    "AGENTPLANE_PG_CONNECT_TIMEOUT",
    "PostgreSQL: longest wait to connect (default 10)",
  ),
  busyTimeout: timeout(
    "busy-timeout",
    "AGENTPLANE_SQLITE_BUSY_TIMEOUT",
    "SQLite: longest wait behind another process's write lock (default 5)",
  ),
})

export const NO_TIMEOUTS: Timeouts = {
  statementTimeout: Option.none(),
  lockTimeout: Option.none(),
  acquireTimeout: Option.none(),
  connectTimeout: Option.none(),
  busyTimeout: Option.none(),
}

/**
 * Every store on `store`, migrated when the layer is built; the pool or file closes with its
 * scope. A `store` that `check` refuses fails the layer before anything is opened. A timeout
 * flag for the other backend than `store`'s is ignored.
 */
export const layer = (
  store: string,
  timeouts: Timeouts = NO_TIMEOUTS,
): Layer.Layer<Stores.Stores, Backend | StoreInvalid> =>
  Either.match(check(store), {
    onLeft: Layer.fail,
    onRight: (store) =>
      isPostgres(store)
        ? PgBackend.layer({
            url: store,
            ...secs("statementTimeout", timeouts.statementTimeout),
            ...secs("lockTimeout", timeouts.lockTimeout),
            ...secs("acquireTimeout", timeouts.acquireTimeout),
            ...secs("connectTimeout", timeouts.connectTimeout),
          })
        : SqliteBackend.layer({ filename: store, ...secs("busyTimeout", timeouts.busyTimeout) }),
  })

/** The bare client on `store` with `timeouts`, not migrated (`migrate` counts what it applies). */
export const layerClient = (
  store: string,
  timeouts: Timeouts = NO_TIMEOUTS,
): Layer.Layer<SqlClient.SqlClient, Backend | StoreInvalid> =>
  Either.match(check(store), {
    onLeft: (e) => Layer.fail(e),
    onRight: (store) =>
      isPostgres(store)
        ? PgBackend.layerClient({
            url: store,
            ...secs("statementTimeout", timeouts.statementTimeout),
            ...secs("lockTimeout", timeouts.lockTimeout),
            ...secs("acquireTimeout", timeouts.acquireTimeout),
            ...secs("connectTimeout", timeouts.connectTimeout),
          })
        : SqliteBackend.layerClient({ filename: store, ...secs("busyTimeout", timeouts.busyTimeout) }),
  })

/** `{[name]: seconds}` when given, nothing otherwise (so the layer's own fallback applies). */
const secs = <K extends string>(name: K, value: Option.Option<number>): { [P in K]?: Duration.Duration } =>
  Option.match(value, {
    onNone: () => ({}),
    onSome: (s) => ({ [name]: Duration.seconds(s) }) as { [P in K]?: Duration.Duration },
  })

/** `store` fit for a log line: a URL's password replaced by `***`, whatever its scheme. */
export const show = (store: string): string => {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(store)) return store
  try {
    const url = new URL(store)
    if (url.password !== "") url.password = "***"
    return url.toString()
  } catch {
    return "(unparseable URL)"
  }
}

// internal

const hasControl = (text: string): boolean => {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}
