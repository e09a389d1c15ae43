/**
 * Opening a backend that cannot serve (issue 13): each failure says which, naming the target.
 * PostgreSQL: nothing listening, a listener that never answers (bounded by the connect
 * timeout), a missing database, a missing role; a URL without a user connects as `postgres`
 * even with `USER` unset. SQLite: a missing directory, a file that is not a database.
 */
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Layer } from "effect"
import { inject } from "vitest"
import type { Backend } from "../../src/errors/StoreError.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { assert } from "../support/Assert.js"

/** The layer's failure; a layer that builds, or takes longer than `bound`, fails the test. */
const failureOf = <A>(layer: Layer.Layer<A, Backend>, bound: Duration.DurationInput = "20 seconds") =>
  Effect.scoped(Layer.build(layer)).pipe(
    Effect.timeoutFail({ duration: bound, onTimeout: () => "the layer hung" }),
    Effect.exit,
    Effect.map((exit) => {
      if (Exit.isSuccess(exit)) return assert.fail("the layer built")
      const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
      if (typeof failure !== "object" || failure === undefined || failure === null) {
        return assert.fail(`expected Backend, got ${String(exit.cause)}`)
      }
      return (failure as Backend).message
    }),
  )

/** A TCP listener that accepts and never says a word, closed with the scope. */
const silentListener = Effect.acquireRelease(
  Effect.async<Server & { port: number }>((resume) => {
    // Its sockets are kept so the release can end them: `close` waits for every one.
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
    })
    Object.assign(server, { sockets })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resume(Effect.succeed(Object.assign(server, { port: typeof address === "object" && address ? address.port : 0 })))
    })
  }),
  (server) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
      for (const socket of (server as unknown as { sockets: Set<Socket> }).sockets) socket.destroy()
    }),
)

/** A port nothing listens on: one just released. */
const closedPort = Effect.map(Effect.scoped(silentListener), (s) => s.port)

const pgUrl = (change: (url: URL) => void) => {
  const url = new URL(inject("pgUrl"))
  change(url)
  return url.toString()
}

describe("connecting to PostgreSQL", () => {
  it.live("nothing listening: connection refused, naming host and port", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const message = yield* failureOf(PgBackend.layer({ url: `postgres://postgres@127.0.0.1:${port}/x` }))
      assert.match(message, new RegExp(`127\\.0\\.0\\.1:${port}`))
      assert.match(message, /connection refused/)
      assert.doesNotMatch(message, /PgClient: Failed to connect/)
    }),
  )

  it.live("a listener that never answers fails within the connect timeout instead of hanging", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const server = yield* silentListener
        const message = yield* failureOf(
          PgBackend.layer({ url: `postgres://postgres@127.0.0.1:${server.port}/x`, connectTimeout: "300 millis" }),
        )
        assert.match(message, /connect timeout/)
        assert.match(message, /connect_failed/)
      }),
    ),
  )

  it.live("a missing database is named", () =>
    Effect.gen(function* () {
      const name = `missing_${randomBytes(4).toString("hex")}`
      const message = yield* failureOf(
        PgBackend.layer({
          url: pgUrl((u) => {
            u.pathname = `/${name}`
          }),
        }),
      )
      assert.match(message, new RegExp(`database "${name}" does not exist`))
    }),
  )

  it.live("a missing role is named", () =>
    Effect.gen(function* () {
      const role = `nobody_${randomBytes(4).toString("hex")}`
      const message = yield* failureOf(
        PgBackend.layer({
          url: pgUrl((u) => {
            u.username = role
          }),
        }),
      )
      assert.match(message, new RegExp(`user "${role}"`))
      assert.match(message, new RegExp(`role "${role}" does not exist`))
    }),
  )

  it.live("a URL without a user connects as postgres, with USER and PGUSER unset", () =>
    Effect.gen(function* () {
      const saved = { USER: process.env.USER, PGUSER: process.env.PGUSER }
      delete process.env.USER
      delete process.env.PGUSER
      try {
        const url = pgUrl((u) => {
          u.username = ""
        })
        yield* Effect.scoped(Layer.build(PgBackend.layerClient({ url }))).pipe(Effect.timeout("20 seconds"))
      } finally {
        for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v
      }
    }),
  )
})

describe("opening a SQLite file", () => {
  it.live("a missing directory names the path and says so", () =>
    Effect.gen(function* () {
      const filename = join(inject("scratchDir"), `no-such-dir-${randomBytes(4).toString("hex")}`, "store.db")
      const message = yield* failureOf(SqliteBackend.layer({ filename }))
      assert.match(message, /its directory does not exist/)
      assert.strictEqual(message.includes(JSON.stringify(filename)), true, message)
    }),
  )

  it.live("a file that is not a database names the path and says so", () =>
    Effect.gen(function* () {
      const filename = join(inject("scratchDir"), `not-a-db-${randomBytes(4).toString("hex")}.db`)
      writeFileSync(filename, "this is a text file, not a database, and long enough to have a header page\n".repeat(20))
      const message = yield* failureOf(SqliteBackend.layer({ filename }))
      assert.match(message, /is not a SQLite database/)
      assert.strictEqual(message.includes(JSON.stringify(filename)), true, message)
    }),
  )
})
