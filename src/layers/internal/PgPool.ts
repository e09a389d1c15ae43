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
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import pg from "pg"

export interface Options {
  readonly url: string
  readonly maxConnections?: number
}

/** `@effect/sql-pg`'s client for `options`, over a pool that drops terminated connections. */
export const layer = (options: Options) =>
  PgClient.layerFromPool({
    acquire: Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const pool = new pg.Pool({
            connectionString: options.url,
            ...(options.maxConnections === undefined ? {} : { max: options.maxConnections }),
            application_name: "agentplane",
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
              await pool.end()
              throw error
            })
          return pool
        },
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" }),
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(1000)),
    ),
  })

// internal

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
