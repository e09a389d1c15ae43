/**
 * The SQLite driver's one lock: a statement outside any transaction never lands inside another
 * fiber's open transaction (on one shared connection it would commit or roll back with it).
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { inject } from "vitest"
import * as Driver from "../../src/layers/internal/Driver.js"
import * as SqliteDriver from "../../src/layers/internal/SqliteDriver.js"
import { assert } from "../support/Assert.js"

describe("SqliteDriver", () => {
  it.live("a statement sent while another fiber's transaction is open waits for it, and survives its rollback", () =>
    Effect.gen(function* () {
      const driver = yield* Driver.Driver
      yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
      const begun = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const tx = yield* Effect.fork(
        driver.transaction("write")(
          Effect.gen(function* () {
            // Inside the transaction a statement runs on its connection, as a store's does.
            const [conn] = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.TransactionConnection))
            yield* conn.execute("INSERT INTO t VALUES (1)", [], undefined)
            yield* Deferred.succeed(begun, undefined)
            yield* Deferred.await(gate)
            return yield* Effect.fail("abort")
          }),
        ),
      )
      yield* Deferred.await(begun)
      const outside = yield* Effect.fork(driver.run("INSERT INTO t VALUES (2)", [], false))
      yield* Effect.sleep("20 millis")
      yield* Deferred.succeed(gate, undefined)
      assert.isTrue(Exit.isFailure(yield* Fiber.await(tx)), "the transaction must fail and roll back")
      yield* Fiber.join(outside)
      const rows = yield* driver.run("SELECT x FROM t ORDER BY x", [], false)
      assert.deepStrictEqual(
        rows.map((r) => r.x),
        [2],
      )
    }).pipe(
      Effect.provide(
        SqliteDriver.layer({ filename: join(inject("scratchDir"), `driver-${randomUUID()}.db`), busyTimeoutMs: 1000 }),
      ),
    ),
  )
})
