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
    }).pipe(Effect.provide(fresh())),
  )

  it.live("waiters interrupted while a transaction holds the lock leave it free for the others", () =>
    Effect.gen(function* () {
      const driver = yield* Driver.Driver
      yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
      const begun = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const tx = yield* Effect.fork(
        driver.transaction("write")(
          Effect.zipRight(
            Deferred.succeed(begun, undefined),
            Effect.zipRight(Deferred.await(gate), inTransaction("INSERT INTO t VALUES (1)")),
          ),
        ),
      )
      yield* Deferred.await(begun)
      // Three fibers queue for the lock: a statement, a transaction, a statement; two give up.
      const quitter = yield* Effect.fork(driver.run("INSERT INTO t VALUES (9)", [], false))
      const waiting = yield* Effect.fork(driver.transaction("write")(inTransaction("INSERT INTO t VALUES (2)")))
      const quitter2 = yield* Effect.fork(driver.transaction("write")(inTransaction("INSERT INTO t VALUES (8)")))
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(quitter)
      yield* Fiber.interrupt(quitter2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(tx)
      yield* Fiber.join(waiting)
      // And the lock is free afterwards: a statement and a transaction run at once.
      yield* driver.transaction("write")(inTransaction("INSERT INTO t VALUES (3)"))
      const rows = yield* driver.run("SELECT x FROM t ORDER BY x", [], false)
      assert.deepStrictEqual(
        rows.map((r) => r.x),
        [1, 2, 3],
      )
    }).pipe(Effect.timeout("5 seconds"), Effect.provide(fresh())),
  )
})

/** A statement on the transaction's own connection, as a store's runs inside one. */
const inTransaction = (statement: string) =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (held) =>
    Option.getOrThrow(held)[0].execute(statement, [], undefined),
  )

const fresh = () =>
  SqliteDriver.layer({ filename: join(inject("scratchDir"), `driver-${randomUUID()}.db`), busyTimeoutMs: 1000 })
