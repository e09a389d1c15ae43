/**
 * The SQLite driver's one lock: a statement outside any transaction never lands inside another
 * fiber's open transaction (on one shared connection it would commit or roll back with it). And
 * its group commit: write transactions ready together share one COMMIT, each answers only once
 * that COMMIT is durable, a member's failure undoes only its own writes, a failed COMMIT fails
 * every member, and a member or leader interrupted while it waits writes nothing.
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Cause, Deferred, Effect, Exit, Fiber, ManagedRuntime, Option } from "effect"
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

  it.live("a write transaction answers only once its rows are committed, seen from another connection", () => {
    const file = scratch()
    return Effect.gen(function* () {
      const driver = yield* Driver.Driver
      yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
      const other = new Database(file, { readonly: true })
      try {
        // Eight transactions ready at once: they share COMMITs, and none may answer before its own.
        const seen = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) =>
            Effect.map(driver.transaction("write")(inTransaction(`INSERT INTO t VALUES (${i})`)), () =>
              other.prepare("SELECT COUNT(*) AS n FROM t WHERE x = ?").get(i),
            ),
          ),
          { concurrency: "unbounded" },
        )
        assert.deepStrictEqual(
          seen,
          Array.from({ length: 8 }, () => ({ n: 1 })),
        )
      } finally {
        other.close()
      }
    }).pipe(Effect.provide(layerOn(file)))
  })

  it.live("a failing transaction among others ready at once undoes only its own rows and answers its own error", () =>
    Effect.gen(function* () {
      const driver = yield* Driver.Driver
      yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
      const exits = yield* Effect.all(
        [1, 2, 3, 4].map((i) =>
          Effect.exit(
            driver.transaction("write")(
              i === 3
                ? Effect.zipRight(inTransaction("INSERT INTO t VALUES (3)"), Effect.fail("three refused"))
                : inTransaction(`INSERT INTO t VALUES (${i})`),
            ),
          ),
        ),
        { concurrency: "unbounded" },
      )
      assert.deepStrictEqual(
        exits.map((e) => (Exit.isSuccess(e) ? "ok" : Option.getOrUndefined(Cause.failureOption(e.cause)))),
        ["ok", "ok", "three refused", "ok"],
      )
      const rows = yield* driver.run("SELECT x FROM t ORDER BY x", [], false)
      assert.deepStrictEqual(
        rows.map((r) => r.x),
        [1, 2, 4],
      )
    }).pipe(Effect.provide(fresh())),
  )

  it.live(
    "a statement that rolls the shared transaction back itself answers with its own text and cause; the others still commit",
    () =>
      Effect.gen(function* () {
        const driver = yield* Driver.Driver
        yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
        // RAISE(ROLLBACK) ends the whole transaction, savepoints and the members before it included.
        yield* driver.run(
          "CREATE TRIGGER refuse_three BEFORE INSERT ON t WHEN NEW.x = 3 BEGIN SELECT RAISE(ROLLBACK, 'three rolled back'); END",
          [],
          false,
        )
        const exits = yield* Effect.all(
          [1, 2, 3, 4].map((i) =>
            Effect.exit(driver.transaction("write")(inTransaction(`INSERT INTO t VALUES (${i})`))),
          ),
          { concurrency: "unbounded" },
        )
        assert.deepStrictEqual(
          exits.map((e) => e._tag),
          ["Success", "Success", "Failure", "Success"],
        )
        const third = exits[2]
        const failure = third !== undefined && Exit.isFailure(third) ? Cause.failureOption(third.cause) : Option.none()
        const error = Option.getOrUndefined(failure)
        assert.isTrue(error instanceof SqlError, `the third fails with its statement's SqlError, got ${String(error)}`)
        const cause = String((error as SqlError).cause)
        assert.isTrue(cause.includes("three rolled back"), `the cause names the trigger's message, got ${cause}`)
        const message = (error as SqlError).message
        assert.isTrue(message.includes("INSERT INTO t VALUES (3)"), `the error names the statement, got ${message}`)
        const rows = yield* driver.run("SELECT x FROM t ORDER BY x", [], false)
        assert.deepStrictEqual(
          rows.map((r) => r.x),
          [1, 2, 4],
        )
      }).pipe(Effect.provide(fresh())),
  )

  it("a timer falling due while transactions run back to back, each awaited as a promise, fires while they run", async () => {
    // An application that embeds the stores awaits each call before it makes the next. SQLite's
    // statements are synchronous, so without a turn of the event loop between them the loop
    // would stay in microtasks and no timer (a sleep, a lease renewal, a sweep) would fire.
    const runtime = ManagedRuntime.make(fresh())
    try {
      const driver = await runtime.runPromise(Driver.Driver)
      await runtime.runPromise(driver.run("CREATE TABLE t (x INTEGER)", [], false))
      const started = Date.now()
      let fired: number | undefined
      setTimeout(() => {
        fired = Date.now()
      }, 50)
      let n = 0
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (fired === undefined && Date.now() - started < 5000)
            await runtime.runPromise(driver.transaction("write")(inTransaction(`INSERT INTO t VALUES (${n++})`)))
        }),
      )
      assert.isTrue(fired !== undefined, `the timer never fired while ${n} transactions ran back to back`)
      assert.isTrue(n > 0, "the load ran")
    } finally {
      await runtime.dispose()
    }
  })

  it.live("when the shared COMMIT fails, every transaction in it fails, and a statement sent meanwhile is kept", () =>
    Effect.gen(function* () {
      const driver = yield* Driver.Driver
      // A deferred foreign key is checked at COMMIT only: the one way to make a COMMIT fail on demand.
      yield* driver.run("CREATE TABLE p (id INTEGER PRIMARY KEY)", [], false)
      yield* driver.run(
        "CREATE TABLE c (x INTEGER, p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)",
        [],
        false,
      )
      const exits = yield* Effect.all(
        [
          driver.transaction("write")(inTransaction("INSERT INTO c VALUES (1, NULL)")),
          // Its body succeeds; the COMMIT it shares then fails on the missing parent 99.
          driver.transaction("write")(inTransaction("INSERT INTO c VALUES (2, 99)")),
          driver.transaction("write")(inTransaction("INSERT INTO c VALUES (3, NULL)")),
          // A statement of no transaction, ready beside them: it must not ride in their COMMIT.
          driver.run("INSERT INTO c VALUES (4, NULL)", [], false),
        ].map((e) => Effect.exit(e)),
        { concurrency: "unbounded" },
      )
      assert.deepStrictEqual(
        exits.map((e) => e._tag),
        ["Failure", "Failure", "Failure", "Success"],
      )
      for (const e of exits.slice(0, 3)) {
        const failure = Exit.isFailure(e) ? Option.getOrUndefined(Cause.failureOption(e.cause)) : undefined
        assert.isTrue(
          failure instanceof SqlError,
          `each member fails with the COMMIT's SqlError, got ${String(failure)}`,
        )
      }
      const rows = yield* driver.run("SELECT x FROM c ORDER BY x", [], false)
      assert.deepStrictEqual(
        rows.map((r) => r.x),
        [4],
      )
    }).pipe(Effect.provide(fresh())),
  )

  it.live("a batch whose leader is interrupted while it waits for the lock commits the others, not the leader", () =>
    Effect.gen(function* () {
      const driver = yield* Driver.Driver
      yield* driver.run("CREATE TABLE t (x INTEGER)", [], false)
      const begun = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        driver.transaction("write")(
          Effect.zipRight(
            Deferred.succeed(begun, undefined),
            Effect.zipRight(Deferred.await(gate), inTransaction("INSERT INTO t VALUES (1)")),
          ),
        ),
      )
      yield* Deferred.await(begun)
      // Forked together: the first leads a batch the second joins; both then wait for the lock.
      const leader = yield* Effect.fork(driver.transaction("write")(inTransaction("INSERT INTO t VALUES (7)")))
      const member = yield* Effect.fork(driver.transaction("write")(inTransaction("INSERT INTO t VALUES (2)")))
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(leader)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(member)
      const rows = yield* driver.run("SELECT x FROM t ORDER BY x", [], false)
      assert.deepStrictEqual(
        rows.map((r) => r.x),
        [1, 2],
      )
    }).pipe(Effect.timeout("5 seconds"), Effect.provide(fresh())),
  )
})

/** A statement on the transaction's own connection, as a store's runs inside one. */
const inTransaction = (statement: string) =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (held) =>
    Option.getOrThrow(held)[0].execute(statement, [], undefined),
  )

const scratch = () => join(inject("scratchDir"), `driver-${randomUUID()}.db`)

const layerOn = (filename: string) => SqliteDriver.layer({ filename, busyTimeoutMs: 1000 })

const fresh = () => layerOn(scratch())
