/**
 * The embedded default: every store on one SQLite file, migrated when the layer starts.
 */
import type { SqlClient } from "@effect/sql"
import { Cause, Config, Duration, Effect, Layer, Option } from "effect"
import * as Kek from "../erasure/Kek.js"
import * as SealedStores from "../erasure/SealedStores.js"
import type { KekInvalid, SealedUnderOtherKek, SealedWithoutKek } from "../errors/ErasureError.js"
import { Backend } from "../errors/StoreError.js"
import type * as Driver from "./internal/Driver.js"
import * as SealingMark from "./internal/SealingMark.js"
import * as Seconds from "./internal/Seconds.js"
import * as Sql from "./internal/Sql.js"
import * as SqliteDriver from "./internal/SqliteDriver.js"
import * as KeyRingSql from "./KeyRingSql.js"
import * as Migrations from "./Migrations.js"
import * as SqlStores from "./SqlStores.js"

export interface Options {
  /** The database file; created when missing (its directory must exist). */
  readonly filename: string
  /**
   * How long a write waits for another process's write lock (a CLI `sweep` beside `serve`)
   * before failing with `busy`. better-sqlite3 waits synchronously, holding the event loop, so
   * this is kept short. Default 5 s, or `AGENTPLANE_SQLITE_BUSY_TIMEOUT` (whole seconds).
   */
  readonly busyTimeout?: Duration.DurationInput
}

/** The busy timeout when neither the options nor the environment give one. */
export const DEFAULT_BUSY_TIMEOUT = Duration.seconds(5)

/**
 * The SQLite client with the settings the stores rely on: foreign keys enforced (off by default
 * in SQLite, and `NotFound` for a missing parent comes from them) and a busy timeout, so a
 * second process on the file waits for the lock a bounded while instead of failing at once.
 * A file that cannot be opened fails with `Backend` naming the path and the reason.
 */
export const layerClient = (options: Options): Layer.Layer<SqlClient.SqlClient | Driver.Driver, Backend> =>
  Layer.unwrapEffect(
    Effect.map(busyTimeoutMs(options), (busyTimeoutMs) =>
      SqliteDriver.layer({ filename: options.filename, busyTimeoutMs }).pipe(
        Layer.catchAllCause((cause) => Layer.fail(cannotOpen(options.filename, cause))),
      ),
    ),
  )

/** Every store on the SQLite file `options.filename`, migrated. */
export const layer = (options: Options): Layer.Layer<SqlStores.Stores, Backend> =>
  SqlStores.layer.pipe(
    Layer.provide(
      // A read-only file or directory first fails at the migration's write: named too.
      Layer.catchAll(Migrations.layer, (e) => Layer.fail(atPath(options.filename, e))),
    ),
    Layer.provide(layerClient(options)),
  )

/**
 * As `layer`, on the file `AGENTPLANE_STORE` names (default `./agentplane.db`), sealed when the
 * store is: the KEK from `AGENTPLANE_KEK` or `AGENTPLANE_KEK_FILE`, else the KEK file beside the
 * store (`<store>.kek`, which `agentplane serve` writes on a fresh store). The store's sealing
 * mark is checked as the CLI checks it (`SealingMark.ts`): a store `serve` sealed is opened with
 * its KEK or refused (`SealedWithoutKek`, `SealedUnderOtherKek`), never written in the clear
 * beside the sealed. With a KEK the wrapped keys live in the store's own `key_ring` table.
 */
export const layerConfig: Layer.Layer<SqlStores.Stores, Backend | KekInvalid | SealedWithoutKek | SealedUnderOtherKek> =
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const filename = yield* Config.string("AGENTPLANE_STORE").pipe(
        Config.withDefault("./agentplane.db"),
        Effect.mapError((e) => new Backend({ detail: `configuration: ${e.message}` })),
      )
      const kek = yield* Effect.flatMap(Kek.fromEnvironment, (given) =>
        Option.isSome(given) ? Effect.succeed(given) : Kek.fromFileIfPresent(Kek.besideStore(filename)),
      )
      const client = Layer.provideMerge(
        Layer.catchAll(Migrations.layer, (e) => Layer.fail(atPath(filename, e))),
        layerClient({ filename }),
      )
      // Built before the stores, so nothing is read or written until the mark has been checked.
      const checked = Layer.provideMerge(
        Layer.effectDiscard(
          SealingMark.check(
            filename,
            Option.map(kek, (k) => k.id),
          ),
        ),
        client,
      )
      const stores = Option.match(kek, {
        onNone: () => SqlStores.layer,
        onSome: (k) => SealedStores.over(SqlStores.layer).pipe(Layer.provide(KeyRingSql.layer(k))),
      })
      return Layer.provide(stores, checked)
    }),
  )

// internal

const busyTimeoutMs = (options: Options): Effect.Effect<number, Backend> =>
  (options.busyTimeout === undefined
    ? Effect.map(Seconds.fromEnv("AGENTPLANE_SQLITE_BUSY_TIMEOUT"), (d) =>
        Option.getOrElse(d, () => DEFAULT_BUSY_TIMEOUT),
      )
    : Effect.succeed(Duration.decode(options.busyTimeout))
  ).pipe(Effect.map((d) => Math.max(0, Math.round(Duration.toMillis(d)))))

/**
 * Why the file cannot serve, by SQLite's code where it gives one. better-sqlite3 throws from its
 * constructor (a defect inside the client layer) when the directory is missing.
 */
const cannotOpen = (filename: string, cause: Cause.Cause<unknown>): Backend => {
  const error = Option.getOrUndefined(Cause.failureOption(cause)) ?? Option.getOrUndefined(Cause.dieOption(cause))
  const driver = Sql.isSqlError(error) ? error.cause : error
  const code = (driver as { code?: unknown } | undefined)?.code
  const text = driver instanceof Error ? driver.message : String(driver)
  const reason =
    code === "SQLITE_NOTADB"
      ? "the file is not a SQLite database"
      : code === "SQLITE_CANTOPEN" || /directory does not exist/i.test(text)
        ? /directory does not exist/i.test(text)
          ? "its directory does not exist"
          : "the file cannot be opened"
        : code === "SQLITE_READONLY" || code === "SQLITE_PERM" || code === "EACCES"
          ? "the file or its directory is not writable"
          : text
  return new Backend({
    reason: "connect_failed",
    detail: `connect_failed: cannot open the SQLite store ${JSON.stringify(filename)}: ${reason}`,
  })
}

const atPath = (filename: string, e: Backend): Backend =>
  /readonly|read-only|not writable/i.test(e.detail)
    ? new Backend({
        reason: "connect_failed",
        detail: `connect_failed: cannot open the SQLite store ${JSON.stringify(filename)}: the file or its directory is not writable`,
      })
    : e
