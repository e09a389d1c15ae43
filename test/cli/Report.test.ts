/**
 * A CLI failure is one line naming what to change, never a blank one.
 */
import { HttpServerError } from "@effect/platform"
import { describe, it } from "vitest"
import * as Report from "../../src/cli/Report.js"
import * as StoreFlag from "../../src/cli/StoreFlag.js"
import { assert } from "../support/Assert.js"

describe("Report.line", () => {
  it("is the error's message after agentplane:", () => {
    assert.strictEqual(
      Report.line(new StoreFlag.StoreInvalid({ store: ":memory:", detail: "is in memory" })),
      'agentplane: store ":memory:" (--store, AGENTPLANE_STORE or AGENTPLANE_DATABASE_URL): is in memory',
    )
  })

  it("names the tag of an error without a message, as the platform's ServeError is", () => {
    assert.strictEqual(
      Report.line(new HttpServerError.ServeError({ cause: undefined })),
      "agentplane: ServeError (no message)",
    )
  })

  it("keeps a message of several lines on one", () => {
    assert.strictEqual(
      Report.line(new Error("connect failed\n  at host db\r\n")),
      "agentplane: connect failed at host db",
    )
  })

  it("writes anything else as text", () => {
    assert.strictEqual(Report.line("plain"), "agentplane: plain")
  })
})
