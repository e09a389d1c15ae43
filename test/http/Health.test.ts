/**
 * Liveness and readiness (issue 17) on each backend, with the probe `serve` uses: `/readyz` is
 * 503 `NotReady` while another client holds a lock that blocks writes and when the store is gone
 * (the SQLite file deleted, the PostgreSQL database dropped), ready again once a lock goes, and
 * `/healthz` answers 200 throughout. The probe never waits on a lock, so nothing here is timed.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import pg from "pg"
import { inject } from "vitest"
import * as Readiness from "../../src/http/Readiness.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

/** These cases are about locks and loss, which the probe answers without timing; not about `store_slow`. */
const SLOW_OK = "30 seconds"

const notReady = (answer: Http.RawResponse, reason: Readiness.Reason) => {
  assert.strictEqual(answer.status, 503, answer.text)
  assert.deepStrictEqual(
    [(answer.json as { _tag?: unknown })._tag, (answer.json as { reason?: unknown }).reason],
    ["NotReady", reason],
  )
}

const ready = (answer: Http.RawResponse) => {
  assert.strictEqual(answer.status, 200, answer.text)
  assert.deepStrictEqual(answer.json, { status: "ready" })
}

const admin = async <A>(f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: inject("pgUrl") })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

describe("readiness", () => {
  it.live("sqlite: another client's write lock and a deleted file are not ready; /healthz stays 200", () =>
    Effect.gen(function* () {
      const filename = join(inject("scratchDir"), `ready-${randomUUID()}.db`)
      yield* Http.withServer(
        (f) =>
          Effect.gen(function* () {
            ready(yield* f.raw("GET", "/readyz"))
            // Another process on the file, inside a write transaction.
            const other = new Sqlite(filename)
            other.exec("BEGIN IMMEDIATE")
            notReady(yield* f.raw("GET", "/readyz"), "store_locked")
            assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
            other.exec("ROLLBACK")
            other.close()
            ready(yield* f.raw("GET", "/readyz"))
            // The server's own connection still writes to the unlinked file; a new client would not find it.
            for (const suffix of ["", "-wal", "-shm"]) rmSync(`${filename}${suffix}`, { force: true })
            notReady(yield* f.raw("GET", "/readyz"), "store_gone")
            assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
          }),
        { readiness: Readiness.layerSqlite(filename, SLOW_OK) },
      ).pipe(Effect.provide(SqliteBackend.layer({ filename })))
    }),
  )

  it.live("postgres: a lock that blocks writes and a dropped database are not ready; /healthz stays 200", () =>
    Effect.gen(function* () {
      const name = `agentplane_ready_${randomBytes(6).toString("hex")}`
      yield* Effect.promise(() => admin((c) => c.query(`CREATE DATABASE ${name}`)))
      const url = new URL(inject("pgUrl"))
      url.pathname = `/${name}`
      yield* Http.withServer(
        (f) =>
          Effect.gen(function* () {
            ready(yield* f.raw("GET", "/readyz"))
            // SHARE mode lets every reader through and blocks every writer: reads alone would miss it.
            const holder = new pg.Client({ connectionString: url.toString() })
            yield* Effect.promise(async () => {
              await holder.connect()
              await holder.query("BEGIN")
              await holder.query("LOCK TABLE tasks IN SHARE MODE")
            })
            notReady(yield* f.raw("GET", "/readyz"), "store_locked")
            assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
            yield* Effect.promise(() => holder.query("ROLLBACK").then(() => holder.end()))
            ready(yield* f.raw("GET", "/readyz"))
            yield* Effect.promise(() => admin((c) => c.query(`DROP DATABASE ${name} WITH (FORCE)`)))
            notReady(yield* f.raw("GET", "/readyz"), "store_unreachable")
            assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
          }),
        { readiness: Readiness.layerPg(url.toString(), SLOW_OK) },
      ).pipe(
        Effect.provide(PgBackend.layer({ url: url.toString(), maxConnections: 2 })),
        Effect.ensuring(Effect.promise(() => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))),
      )
    }),
  )
})
