/**
 * The pg client over a pool that drops a connection the server has terminated before anyone
 * draws it again.
 *
 * When a backend is terminated (an operator's `pg_terminate_backend`, a server shutdown, an idle
 * timeout) the server sends a FATAL error and then closes the socket. The statement in flight
 * fails with the FATAL error at once, and `@effect/sql-pg` releases a connection that ran a
 * single statement without telling the pool anything went wrong; the socket's close arrives a
 * moment later. In between, the pool holds the dead connection as idle, and the next verb to
 * draw it fails too: one lost backend cost two verbs. pg-pool drops a client that is no longer
 * queryable when it is released, so a FATAL error marks the client so at once.
 */

import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import pg from "pg"
import * as Driver from "./Driver.js"
import * as PgDriver from "./PgDriver.js"

export interface Options {
  readonly url: string
  readonly maxConnections?: number
  /** Server-side bound on one statement (`statement_timeout`), milliseconds; 0 for none. */
  readonly statementTimeoutMs: number
  /** Server-side bound on waiting for one lock (`lock_timeout`), milliseconds; 0 for none. */
  readonly lockTimeoutMs: number
  /** How long a verb waits for a pooled connection when every one is busy, milliseconds. */
  readonly acquireTimeoutMs: number
  /** How long opening a new connection may take, TCP to authenticated, milliseconds. */
  readonly connectTimeoutMs: number
}

/** The user when the URL names none: explicit, since pg's own default is `$USER`, unset under many service managers. */
export const DEFAULT_USER = "postgres"

/**
 * `@effect/sql-pg`'s client for `options`, over a pool that drops terminated connections, and
 * the stores' `Driver` over the same pool.
 */
export const layer = (
  options: Options,
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Driver.Driver, SqlError> =>
  Layer.unwrapScoped(
    Effect.map(acquire(options), (pool) =>
      Layer.merge(
        PgClient.layerFromPool({ acquire: Effect.succeed(pool) }),
        Layer.succeed(Driver.Driver, PgDriver.make(pool)),
      ),
    ),
  )

// internal

const acquire = (options: Options) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const target = targetOf(options.url)
        const pool = new pg.Pool({
          // pg parses the URL over its config, so the default user goes into the URL itself.
          connectionString: withUser(options.url, target.user),
          ...(options.maxConnections === undefined ? {} : { max: options.maxConnections }),
          application_name: "agentplane",
          // Sent at connect, so every statement on every connection is bounded by the server:
          // a table lock held elsewhere fails a verb within the lock timeout instead of hanging
          // it (and its HTTP request) for as long as the lock is held.
          statement_timeout: options.statementTimeoutMs,
          lock_timeout: options.lockTimeoutMs,
          // pg-pool bounds both the wait for a busy pool and a new connection by this value;
          // the client class below bounds a new connection by the connect timeout as well.
          connectionTimeoutMillis: options.acquireTimeoutMs,
          Client: withConnectTimeout(options.connectTimeoutMs),
        })
        // As `@effect/sql-pg` does: an idle client's socket error is the pool's to handle.
        pool.on("error", () => undefined)
        pool.on("connect", (client) => {
          // Ahead of the client's own listener, which hands the error to the statement, whose
          // callback releases the client before any later listener runs.
          connectionOf(client)?.prependListener("errorMessage", (message: { severity?: string; code?: string }) => {
            if (isFatal(message)) markUnusable(client)
          })
        })
        // Fails the layer now, not the first verb, when the server cannot be reached, or when
        // a pg upgrade moved the internals the marking relies on (it would stop working silently).
        await pool
          .connect()
          .then(async (probe) => {
            try {
              await probe.query("SELECT 1")
              assertInternals(probe)
            } finally {
              probe.release()
            }
          })
          .catch(async (error: unknown) => {
            await pool.end().catch(() => undefined)
            throw error
          })
        return pool
      },
      catch: (cause) =>
        new SqlError({
          cause,
          message: `cannot connect to PostgreSQL ${describeTarget(targetOf(options.url))}: ${describeConnectFailure(cause, targetOf(options.url), options)}`,
        }),
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000)),
  )

interface Target {
  readonly host: string
  readonly port: string
  readonly database: string
  readonly user: string
}

/** Where `url` points, with the user pg will connect as; a URL pg cannot parse fails at connect. */
const targetOf = (url: string): Target => {
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  const user =
    parsed !== undefined && parsed.username !== ""
      ? decodeURIComponent(parsed.username)
      : (process.env.PGUSER ?? DEFAULT_USER)
  const database =
    parsed !== undefined && parsed.pathname.length > 1 ? decodeURIComponent(parsed.pathname.slice(1)) : user
  return { host: parsed?.hostname || "localhost", port: parsed?.port || "5432", database, user }
}

/** `url` with `user` when it names none; a URL `URL` cannot parse is left for pg to refuse. */
const withUser = (url: string, user: string): string => {
  if (!URL.canParse(url)) return url
  const parsed = new URL(url)
  if (parsed.username !== "") return url
  parsed.username = encodeURIComponent(user)
  return parsed.toString()
}

const describeTarget = (t: Target) =>
  `at ${t.host}:${t.port}, database ${JSON.stringify(t.database)}, user ${JSON.stringify(t.user)}`

/**
 * Which of the ways a connection fails this was, in the operator's terms; the driver's own
 * message only when none fits. Read by the code first (SQLSTATE or errno), never by wording alone.
 */
const describeConnectFailure = (cause: unknown, t: Target, options: Options): string => {
  const error = cause instanceof Error ? (cause as Error & { code?: string }) : undefined
  const code = error?.code ?? (error?.cause as { code?: string } | undefined)?.code
  const text = error?.message ?? String(cause)
  switch (code) {
    case "ECONNREFUSED":
      return `connection refused: nothing listens on ${t.host}:${t.port}`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `host ${JSON.stringify(t.host)} not found`
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "ETIMEDOUT":
      return `no route to ${t.host}:${t.port} (${code})`
    case "3D000":
      return `database ${JSON.stringify(t.database)} does not exist`
    case "28000":
      return `the server refused user ${JSON.stringify(t.user)}: ${text}`
    case "28P01":
      return `password authentication failed for user ${JSON.stringify(t.user)}`
    case "53300":
      return "the server has no connection slots left (too many connections)"
    case "57P03":
      return "the server is starting up or shutting down"
  }
  if (/timeout/i.test(text)) {
    return `no answer within ${Math.min(options.connectTimeoutMs, options.acquireTimeoutMs)} ms (connect timeout)`
  }
  if (/password/i.test(text)) return `user ${JSON.stringify(t.user)} needs a password, and the URL gives none`
  return text
}

/** pg's client with a connect timeout of its own, apart from the pool's acquire timeout. */
const withConnectTimeout = (ms: number): typeof pg.Client =>
  class extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(
        typeof config === "string"
          ? { connectionString: config, connectionTimeoutMillis: ms }
          : { ...config, connectionTimeoutMillis: ms },
      )
    }
  }

/**
 * FATAL and PANIC end the backend. Severity can be localised by `lc_messages`, so the SQLSTATE
 * classes that end a session count too: operator intervention (57P) and connection exception (08).
 */
const isFatal = (message: { severity?: string; code?: string }): boolean =>
  message.severity === "FATAL" ||
  message.severity === "PANIC" ||
  message.code?.startsWith("57P") === true ||
  message.code?.startsWith("08") === true

/** Throws unless `client` has the two members this module relies on. */
const assertInternals = (client: pg.PoolClient): void => {
  const queryable = (client as unknown as { _queryable?: unknown })._queryable
  if (typeof connectionOf(client)?.prependListener !== "function" || typeof queryable !== "boolean") {
    throw new Error(
      "this pg version lacks Client.connection or Client._queryable, which PgPool uses to drop terminated connections; use the pg version in package-lock.json",
    )
  }
}

/** The client's protocol connection, which reports each error message the server sends. */
const connectionOf = (client: pg.PoolClient): Listenable | undefined =>
  (client as unknown as { connection?: Listenable }).connection

interface Listenable {
  readonly prependListener: (event: string, f: (message: never) => void) => void
}

/**
 * The flag pg-pool reads on release (its own code marks it as the interface it lacks): a client
 * that is not queryable is removed and ended instead of going back to the idle list.
 */
const markUnusable = (client: pg.PoolClient): void => {
  ;(client as unknown as { _queryable: boolean })._queryable = false
}
