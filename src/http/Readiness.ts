/**
 * Readiness (`GET /readyz`, decided for issue 17): may a load balancer send this process traffic?
 * Only if its store can take a write now. Liveness (`/healthz`) stays a constant answer that
 * touches nothing, so a store outage takes the process out of rotation without getting it
 * restarted.
 *
 * The probe works on a connection of its own, opened for the probe and closed after it, so it
 * sees the store as a new client would: a deleted SQLite file is gone even though the server's
 * own connection still writes to the unlinked inode, and a probe never queues behind the server's
 * pool. It never waits on a lock: it asks for the write locks without waiting and answers
 * `store_locked` at once, so the answer needs no timing and a probe cannot pile up behind a held
 * lock. Everything is bounded by `timeout` (default 2 s), past which it answers `store_slow`.
 */
import { statSync } from "node:fs"
import * as Reactivity from "@effect/experimental/Reactivity"
import { HttpApiSchema } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Context, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import pg from "pg"

/**
 * `store_unreachable`: no connection could be made; `store_gone`: the SQLite file is missing or
 * is another file than the one the server opened; `store_locked`: another client holds a lock
 * that blocks writes; `store_slow`: the probe did not finish within its bound.
 */
export const Reason = Schema.Literal("store_unreachable", "store_gone", "store_locked", "store_slow")
export type Reason = typeof Reason.Type

/** The process should get no traffic now; `reason` says why (the detail is in the server's log). */
export class NotReady extends Schema.TaggedError<NotReady>()(
  "NotReady",
  { reason: Reason, message: Schema.String },
  HttpApiSchema.annotations({ status: 503 }),
) {}

/** The answer when ready. */
export const Ready = Schema.Struct({ status: Schema.Literal("ready") })

export class Readiness extends Context.Tag("agentplane/http/Readiness")<
  Readiness,
  {
    /** Succeeds when the store takes a write now; `NotReady` with the reason otherwise. Changes nothing. */
    readonly check: Effect.Effect<void, NotReady>
  }
>() {}

/** The default bound on one probe. */
export const DEFAULT_TIMEOUT = Duration.seconds(2)

/** Always ready: for stores with nothing to lose (the memory backend) and for tests of other things. */
export const layerAlways: Layer.Layer<Readiness> = Layer.succeed(Readiness, { check: Effect.void })

/**
 * The SQLite file `filename`: present, the same file (inode) as when the layer was built, and its
 * write lock free (`BEGIN IMMEDIATE`, no busy wait, rolled back).
 */
export const layerSqlite = (filename: string, timeout: Duration.DurationInput = DEFAULT_TIMEOUT) =>
  Layer.sync(Readiness, () => {
    const opened = inode(filename)
    const probe = Effect.gen(function* () {
      const now = inode(filename)
      if (Option.isNone(now)) return yield* notReady("store_gone", "the store's file is missing")
      if (Option.isSome(opened) && opened.value !== now.value) {
        return yield* notReady("store_gone", "the store's file was replaced by another")
      }
      const sql = yield* SqliteClient.make({ filename })
      // A busy handler would block the event loop (better-sqlite3 waits synchronously).
      yield* sql.unsafe("PRAGMA busy_timeout = 0")
      yield* writeLock(sql)
    }).pipe(
      Effect.scoped,
      Effect.provide(Reactivity.layer),
      Effect.catchTag("SqlError", (e) =>
        isBusy(e.cause) ? notReady("store_locked", "another client holds the store's write lock") : unreachable(e),
      ),
    )
    return { check: bounded(probe, timeout) }
  })

/**
 * The PostgreSQL database at `url`: reachable, and every table of its schema free of locks that
 * block writes (`LOCK … IN ROW EXCLUSIVE MODE NOWAIT`, which the stores' own writers never
 * conflict with, in a transaction rolled back).
 */
export const layerPg = (url: string, timeout: Duration.DurationInput = DEFAULT_TIMEOUT) =>
  Layer.succeed(Readiness, {
    check: bounded(
      Effect.acquireUseRelease(
        Effect.tryPromise({
          try: async () => {
            const client = new pg.Client({
              connectionString: withUser(url),
              connectionTimeoutMillis: Math.max(1, Duration.toMillis(timeout)),
            })
            // A socket error after connect must not become an uncaught exception.
            client.on("error", () => {})
            await client.connect()
            return client
          },
          catch: (cause) => cause,
        }),
        (client) =>
          Effect.tryPromise({
            try: async () => {
              await client.query("BEGIN")
              const tables = await client.query<{ name: string }>(
                "SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = current_schema()",
              )
              if (tables.rows.length > 0) {
                await client.query(
                  `LOCK TABLE ${tables.rows.map((r) => r.name).join(", ")} IN ROW EXCLUSIVE MODE NOWAIT`,
                )
              }
              await client.query("ROLLBACK")
            },
            catch: (cause) => cause,
          }),
        (client) => Effect.promise(() => client.end().catch(() => undefined)),
      ).pipe(
        Effect.catchAll((cause) =>
          // 55P03 lock_not_available: NOWAIT met a conflicting lock.
          (cause as { code?: unknown }).code === "55P03"
            ? notReady("store_locked", "another client holds a lock that blocks the store's writes")
            : unreachable(cause),
        ),
      ),
      timeout,
    ),
  })

// internal

const notReady = (reason: Reason, message: string) => Effect.fail(new NotReady({ reason, message }))

const unreachable = (cause: unknown) =>
  Effect.zipRight(
    Effect.logWarning("agentplane.readiness.unreachable", String(cause)),
    notReady("store_unreachable", "the store cannot be reached"),
  )

const bounded = (probe: Effect.Effect<void, NotReady>, timeout: Duration.DurationInput) =>
  probe.pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new NotReady({ reason: "store_slow", message: "the store did not answer the probe in time" }),
    }),
  )

/**
 * The write lock, without waiting. The server's own connection holds it for each write, so a busy
 * answer is retried a few times, briefly, before it counts as held by someone else.
 */
const writeLock = (sql: SqlClient.SqlClient) =>
  Effect.zipRight(sql.unsafe("BEGIN IMMEDIATE"), sql.unsafe("ROLLBACK")).pipe(
    Effect.retry({ times: 5, while: (e) => isBusy(e.cause), schedule: Schedule.spaced("20 millis") }),
  )

const isBusy = (cause: unknown): boolean => {
  const code = (cause as { code?: unknown } | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
}

const inode = (filename: string): Option.Option<number> => {
  try {
    return Option.some(statSync(filename).ino)
  } catch {
    return Option.none()
  }
}

/** pg's default user is `$USER`, often unset under a service manager: the stores connect as `PGUSER`, else `postgres`, and so does the probe. */
const withUser = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.username !== "") return url
    parsed.username = encodeURIComponent(process.env.PGUSER ?? "postgres")
    return parsed.toString()
  } catch {
    return url
  }
}
