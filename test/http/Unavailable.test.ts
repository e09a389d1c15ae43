/**
 * Store outages seen through the HTTP API (issue 13): a lock held elsewhere, a slow statement, a
 * full pool and another process's SQLite write lock each fail a request within its bound, as a
 * 503 `Unavailable` naming the reason and nothing of the driver's text; the server serves again
 * once the cause is gone. PostgreSQL runs on a database of its own, so the table locks taken
 * here hold up no other test.
 */
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Deferred, Effect, Fiber } from "effect"
import pg from "pg"
import { inject } from "vitest"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

/** A fresh, migrated-on-use database on the tests' server, dropped when the scope closes. */
const privateDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const name = `agentplane_outage_${randomBytes(6).toString("hex")}`
    const admin = new pg.Client({ connectionString: inject("pgUrl") })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(inject("pgUrl"))
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  }),
  ({ name }) =>
    Effect.promise(async () => {
      const admin = new pg.Client({ connectionString: inject("pgUrl") })
      await admin.connect()
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }),
)

/**
 * Waits until `n` backends of the database at `url` wait on a lock: a request is then known to
 * hold its pool connection, where a fixed sleep only guesses it on a loaded machine.
 */
const lockWaiters = (url: string, n: number) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      for (;;) {
        const { rows } = await client.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        if (Number(rows[0]?.n ?? 0) >= n) return
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await client.end()
    }
  })

/** `table` locked from a raw connection of its own until `release` completes. */
const lockTable = (url: string, table: string) =>
  Effect.gen(function* () {
    const release = yield* Deferred.make<void>()
    const held = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      Effect.promise(async () => {
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        await client.query("BEGIN")
        await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
        return client
      }).pipe(
        Effect.tap(() => Deferred.succeed(held, undefined)),
        // Released at the latest after a minute, so a broken test cannot hold it forever.
        Effect.tap(() => Deferred.await(release).pipe(Effect.timeout("60 seconds"), Effect.ignore)),
        Effect.flatMap((client) => Effect.promise(() => client.query("ROLLBACK").then(() => client.end()))),
      ),
    )
    yield* Deferred.await(held)
    return {
      release: Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(fiber)),
    }
  })

/** The answer is the tagged 503 with `reason`, carrying no driver text. */
const unavailable = (answer: Http.RawResponse, reason: string) => {
  assert.strictEqual(answer.status, 503, answer.text)
  const body = answer.json as { _tag: string; reason: string; message: string }
  assert.deepStrictEqual([body._tag, body.reason], ["Unavailable", reason])
  assert.deepStrictEqual(Object.keys(body).sort(), ["_tag", "message", "reason"])
  assert.match(body.message, /retry later$/)
  // Nothing of the driver: no statement, table, index, SQLSTATE or library name.
  assert.doesNotMatch(answer.text, /canceling|statement timeout|lock timeout|tasks|_idx|SQLITE|pg|sql/i)
}

describe("store outages over HTTP", () => {
  it.live("postgres: under a held table lock a request fails with lock_timeout, then serves once the lock goes", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const db = yield* privateDatabase
        const stores = PgBackend.layer({ url: db.url, maxConnections: 3, lockTimeout: "300 millis" })
        yield* Http.withServer((f) =>
          Effect.gen(function* () {
            assert.strictEqual((yield* f.raw("GET", "/tasks", { as: "rita" })).status, 200)
            const lock = yield* lockTable(db.url, "tasks")
            // Answered while the lock is still held: the release comes only after.
            const during = yield* f.raw("GET", "/tasks", { as: "rita" })
            unavailable(during, "lock_timeout")
            const halted = yield* f.raw("PUT", "/admin/halt", {
              as: "ada",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ reason: "incident" }),
            })
            assert.strictEqual(halted.status, 204, "a route whose tables are not locked still serves")
            yield* lock.release
            assert.strictEqual((yield* f.raw("GET", "/tasks", { as: "rita" })).status, 200)
          }),
        ).pipe(Effect.provide(stores))
      }),
    ),
  )

  it.live("postgres: a statement held up past the statement timeout fails with statement_timeout", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const db = yield* privateDatabase
        const stores = PgBackend.layer({
          url: db.url,
          maxConnections: 3,
          lockTimeout: "30 seconds",
          // Long enough for the request after the release on a loaded machine, still far below the lock's.
          statementTimeout: "2 seconds",
        })
        yield* Http.withServer((f) =>
          Effect.gen(function* () {
            const lock = yield* lockTable(db.url, "cases")
            unavailable(yield* f.raw("GET", "/cases", { as: "rita" }), "statement_timeout")
            yield* lock.release
            assert.strictEqual((yield* f.raw("GET", "/cases", { as: "rita" })).status, 200)
          }),
        ).pipe(Effect.provide(stores))
      }),
    ),
  )

  it.live("postgres: with every connection busy a request fails with pool_exhausted before the busy one ends", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const db = yield* privateDatabase
        const stores = PgBackend.layer({
          url: db.url,
          maxConnections: 1,
          lockTimeout: "20 seconds",
          // Also bounds opening the connection, which a loaded machine can take hundreds of ms to do.
          acquireTimeout: "2 seconds",
        })
        yield* Http.withServer((f) =>
          Effect.gen(function* () {
            assert.strictEqual((yield* f.raw("GET", "/tasks", { as: "rita" })).status, 200)
            const lock = yield* lockTable(db.url, "tasks")
            // Holds the pool's only connection, waiting on the lock.
            const stuck = yield* Effect.fork(f.raw("GET", "/tasks", { as: "rita" }))
            yield* lockWaiters(db.url, 1)
            const waiting = yield* f.raw("GET", "/cases", { as: "rita" })
            assert.strictEqual((yield* Fiber.poll(stuck))._tag, "None", "the busy request ended first")
            unavailable(waiting, "pool_exhausted")
            yield* lock.release
            assert.strictEqual((yield* Fiber.join(stuck)).status, 200)
            assert.strictEqual((yield* f.raw("GET", "/cases", { as: "rita" })).status, 200)
          }),
        ).pipe(Effect.provide(stores))
      }),
    ),
  )

  it.live("sqlite: behind another process's write lock a write fails with busy, then serves once it goes", () =>
    Effect.gen(function* () {
      const filename = join(inject("scratchDir"), `busy-${randomBytes(6).toString("hex")}.db`)
      const stores = SqliteBackend.layer({ filename, busyTimeout: "200 millis" })
      yield* Http.withServer((f) =>
        Effect.gen(function* () {
          const halt = () =>
            f.raw("PUT", "/admin/halt", {
              as: "ada",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ reason: "incident" }),
            })
          const deliver = () =>
            f.raw("POST", "/events", {
              as: "pat",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ id: "e-1", kind: "k", correlation: [], payload: null }),
            })
          assert.strictEqual((yield* halt()).status, 204)
          // The other process: a connection of its own on the file, holding the write lock.
          const other = new Sqlite(filename)
          other.exec("BEGIN IMMEDIATE")
          try {
            // A single statement, and a transaction whose BEGIN IMMEDIATE is what waits.
            unavailable(yield* halt(), "busy")
            unavailable(yield* deliver(), "busy")
          } finally {
            other.exec("ROLLBACK")
            other.close()
          }
          assert.strictEqual((yield* halt()).status, 204)
          assert.strictEqual((yield* deliver()).status, 202)
        }),
      ).pipe(Effect.provide(stores))
    }),
  )
})
