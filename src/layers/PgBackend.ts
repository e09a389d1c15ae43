/**
 * Every store on shared PostgreSQL, where several plane instances serve one tenant.
 */
import type { SqlClient } from "@effect/sql"
import { Config, Duration, Effect, Layer, Option } from "effect"
import { Backend } from "../errors/StoreError.js"
import type * as Driver from "./internal/Driver.js"
import * as PgPool from "./internal/PgPool.js"
import * as Seconds from "./internal/Seconds.js"
import * as Sql from "./internal/Sql.js"
import * as Migrations from "./Migrations.js"
import * as SqlStores from "./SqlStores.js"

/**
 * Every bound has a default, so no verb waits without end on a lock, a full pool or a silent
 * server. Each may also come from the environment (`AGENTPLANE_PG_STATEMENT_TIMEOUT`,
 * `AGENTPLANE_PG_LOCK_TIMEOUT`, `AGENTPLANE_PG_ACQUIRE_TIMEOUT`, `AGENTPLANE_PG_CONNECT_TIMEOUT`,
 * whole seconds like the CLI's flags, `5`); an option given here wins over the environment.
 */
export interface Options {
  /** `postgres://user@host:port/database`. With no user in the URL, `PGUSER`, else `postgres` (never `$USER`). */
  readonly url: string
  /** Pool size; every verb holds at most one connection, so even 2 cannot deadlock. Default 10. */
  readonly maxConnections?: number
  /** Longest one statement may run on the server. Default 30 s: far above any verb's plan, below a client's patience. */
  readonly statementTimeout?: Duration.DurationInput
  /** Longest a statement waits for a lock (a table another session locked, a row another verb holds). Default 5 s. */
  readonly lockTimeout?: Duration.DurationInput
  /** Longest a verb waits for a pooled connection when every one is in use. Default 10 s. */
  readonly acquireTimeout?: Duration.DurationInput
  /** Longest opening a connection may take, so a listener that never answers fails start-up. Default 10 s. */
  readonly connectTimeout?: Duration.DurationInput
}

/** The bounds when neither the options nor the environment give one. */
export const DEFAULTS = {
  statementTimeout: Duration.seconds(30),
  lockTimeout: Duration.seconds(5),
  acquireTimeout: Duration.seconds(10),
  connectTimeout: Duration.seconds(10),
} as const

/**
 * The pg client for `options`, with the driver's error turned into `Backend` naming what failed
 * (connection refused, unknown database or role, timeout). Its pool drops a connection the
 * server terminated, so one lost backend fails one verb, not also the next.
 */
export const layerClient = (options: Options): Layer.Layer<SqlClient.SqlClient | Driver.Driver, Backend> =>
  Layer.unwrapEffect(
    Effect.map(resolve(options), (pool) =>
      PgPool.layer(pool).pipe(
        Layer.catchAll((e) =>
          Layer.fail(
            Sql.isSqlError(e)
              ? Sql.backend(e)
              : new Backend({ reason: "connect_failed", detail: `connect_failed: ${String(e)}` }),
          ),
        ),
      ),
    ),
  )

/** Every store on the database at `options.url`, migrated (under an advisory lock). */
export const layer = (options: Options): Layer.Layer<SqlStores.Stores, Backend> =>
  SqlStores.layer.pipe(Layer.provide(Migrations.layer), Layer.provide(layerClient(options)))

/** As `layer`, reading `DATABASE_URL`, optionally `AGENTPLANE_PG_POOL`, and the timeouts' variables. */
export const layerConfig: Layer.Layer<SqlStores.Stores, Backend> = Layer.unwrapEffect(
  Config.all({
    url: Config.string("DATABASE_URL"),
    pool: Config.option(Config.integer("AGENTPLANE_PG_POOL")),
  }).pipe(
    Effect.map(({ url, pool }) => layer(pool._tag === "Some" ? { url, maxConnections: pool.value } : { url })),
    Effect.mapError((e) => new Backend({ detail: `configuration: ${e.message}` })),
  ),
)

// internal

/** The pool's options in milliseconds: each bound from `options`, else the environment, else `DEFAULTS`. */
const resolve = (options: Options): Effect.Effect<PgPool.Options, Backend> =>
  Effect.gen(function* () {
    const bound = (name: keyof typeof DEFAULTS, variable: string) =>
      options[name] === undefined
        ? Effect.map(Seconds.fromEnv(variable), (fromEnv) =>
            Duration.toMillis(Option.getOrElse(fromEnv, () => DEFAULTS[name])),
          )
        : Effect.succeed(Duration.toMillis(Duration.decode(options[name])))
    const ms = yield* Effect.all({
      statementTimeoutMs: bound("statementTimeout", "AGENTPLANE_PG_STATEMENT_TIMEOUT"),
      lockTimeoutMs: bound("lockTimeout", "AGENTPLANE_PG_LOCK_TIMEOUT"),
      acquireTimeoutMs: bound("acquireTimeout", "AGENTPLANE_PG_ACQUIRE_TIMEOUT"),
      connectTimeoutMs: bound("connectTimeout", "AGENTPLANE_PG_CONNECT_TIMEOUT"),
    })
    // Whole milliseconds, at least 1: pg reads 0 as "no bound", which no default means.
    const whole = (n: number) => Math.max(1, Math.round(n))
    return {
      url: options.url,
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
      statementTimeoutMs: whole(ms.statementTimeoutMs),
      lockTimeoutMs: whole(ms.lockTimeoutMs),
      acquireTimeoutMs: whole(ms.acquireTimeoutMs),
      connectTimeoutMs: whole(ms.connectTimeoutMs),
    }
  })
