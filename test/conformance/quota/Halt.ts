/**
 * The emergency stop: `setHalt` sets, replaces and lifts; `halted` reads the reason in force.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import type { Tester } from "./Fixtures.js"

export const halt = (test: Tester) => {
  describe("setHalt / halted", () => {
    test("none for a fresh tenant", () =>
      asFreshTenant(
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* (yield* QuotaStore).halted(), Option.none())
        }),
      ))

    test("some sets the stop, a second reason replaces the first, none lifts it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* store.setHalt(Option.some("runaway spend"))
          assert.deepStrictEqual(yield* store.halted(), Option.some("runaway spend"))
          yield* store.setHalt(Option.some("incident 42"))
          assert.deepStrictEqual(yield* store.halted(), Option.some("incident 42"))
          yield* store.setHalt(Option.none())
          assert.deepStrictEqual(yield* store.halted(), Option.none())
        }),
      ))

    test("lifting a halt that was never set succeeds", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* store.setHalt(Option.none())
          yield* store.setHalt(Option.none())
          assert.deepStrictEqual(yield* store.halted(), Option.none())
        }),
      ))
  })
}
