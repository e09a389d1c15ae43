/**
 * The reason a `Backend` carries is read off the driver's code: what a caller (and the HTTP
 * layer's 503 body) may act on. A connection that failed is worth retrying elsewhere; a statement
 * the client encoded wrongly is not.
 */
import { SqlError } from "@effect/sql/SqlError"
import { describe, it } from "vitest"
import { Backend } from "../../src/errors/StoreError.js"
import * as Unavailable from "../../src/http/Unavailable.js"
import * as Sql from "../../src/layers/internal/Sql.js"
import { assert } from "../support/Assert.js"

/** A driver error as pg hands it over: its SQLSTATE on the cause, possibly wrapped once more. */
const pgError = (code: string, message = "failed", wrapped = false) => {
  const cause = Object.assign(new Error(message), { code })
  return new SqlError({ cause: wrapped ? Object.assign(new Error("wrapper"), { cause }) : cause, message: "Failed" })
}

describe("Sql.reasonOf", () => {
  it("pg's connection exceptions (class 08, 57P) are connect_failed", () => {
    for (const code of ["08000", "08003", "08006", "08001", "57P01", "57P03"]) {
      assert.strictEqual(Sql.reasonOf(pgError(code)), "connect_failed", code)
      assert.strictEqual(Sql.reasonOf(pgError(code, "failed", true)), "connect_failed", `${code}, wrapped`)
    }
  })

  it("a protocol violation (08P01) is backend: the statement was encoded wrongly, a reconnect does not help", () => {
    const e = pgError("08P01", "bind message has 4476 parameter formats but 1 parameters")
    assert.strictEqual(Sql.reasonOf(e), "backend")
    assert.isTrue(Sql.backend(e).detail.startsWith("backend: "), Sql.backend(e).detail)
  })

  it("lock and statement timeouts, a busy SQLite file and anything else keep their reasons", () => {
    assert.strictEqual(Sql.reasonOf(pgError("55P03")), "lock_timeout")
    assert.strictEqual(
      Sql.reasonOf(pgError("57014", "canceling statement due to statement timeout")),
      "statement_timeout",
    )
    assert.strictEqual(Sql.reasonOf(pgError("57014", "canceling statement due to user request")), "backend")
    assert.strictEqual(Sql.reasonOf(pgError("SQLITE_BUSY")), "busy")
    assert.strictEqual(Sql.reasonOf(pgError("23505")), "backend")
  })
})

describe("Sql.backend", () => {
  it("carries the reason as a field, the one the HTTP layer answers with", () => {
    for (const [code, reason] of [
      ["55P03", "lock_timeout"],
      ["08006", "connect_failed"],
      ["SQLITE_BUSY", "busy"],
      [Sql.STORE_GONE, "store_gone"],
      ["23505", "backend"],
    ] as const) {
      const e = Sql.backend(pgError(code))
      assert.strictEqual(e.reason, reason, code)
      assert.strictEqual(Unavailable.fromBackend(e).reason, reason, code)
    }
  })

  it("the HTTP answer follows the field, never the detail's text", () => {
    // A detail that happens to begin with a reason's word (a driver message, a table name) is not one.
    const worded = new Backend({ detail: "lock_timeout: looks like a reason" })
    assert.strictEqual(worded.reason, "backend")
    assert.strictEqual(Unavailable.fromBackend(worded).reason, "backend")
    const busy = Unavailable.fromBackend(new Backend({ reason: "busy", detail: "SQLITE_BUSY: database is locked" }))
    assert.strictEqual(busy.reason, "busy")
    assert.isFalse(busy.message.includes("SQLITE_BUSY"), busy.message)
  })
})
