/**
 * The running set: `reserve` admits under a limit and is idempotent per run, `release` frees,
 * `running` counts.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { TooManyRuns } from "../../../src/errors/QuotaError.js"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, limit, type Tester, unlimited } from "./Fixtures.js"

export const admission = (test: Tester) => {
  describe("reserve", () => {
    test("admits while the count is below the limit, then TooManyRuns with the current count", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const tenant = yield* Tenant
          yield* store.reserve(generateRunId(), limit(2), at(1))
          yield* store.reserve(generateRunId(), limit(2), at(2))
          const error = yield* Effect.flip(store.reserve(generateRunId(), limit(2), at(3)))
          assertError(error, new TooManyRuns({ tenant, running: 2 }))
          assert.strictEqual(yield* store.running(), 2)
        }),
      ))

    test("a run already in is admitted again at the ceiling and takes no second slot", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const [a, b] = [generateRunId(), generateRunId()]
          yield* store.reserve(a, limit(2), at(1))
          yield* store.reserve(b, limit(2), at(1))
          yield* store.reserve(a, limit(2), at(5))
          yield* store.reserve(a, limit(1), at(6))
          assert.strictEqual(yield* store.running(), 2)
        }),
      ))

    test("a repeat below the ceiling takes no second slot", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const a = generateRunId()
          yield* store.reserve(a, limit(5), at(1))
          yield* store.reserve(a, limit(5), at(2))
          yield* store.reserve(a, unlimited, at(3))
          assert.strictEqual(yield* store.running(), 1)
        }),
      ))

    test("a limit of 0 admits nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const tenant = yield* Tenant
          const error = yield* Effect.flip(store.reserve(generateRunId(), limit(0), at(1)))
          assertError(error, new TooManyRuns({ tenant, running: 0 }))
          assert.strictEqual(yield* store.running(), 0)
        }),
      ))

    test("no limit always admits and still records the run", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const tenant = yield* Tenant
          for (let i = 0; i < 5; i++) yield* store.reserve(generateRunId(), unlimited, at(i))
          assert.strictEqual(yield* store.running(), 5)
          // The unlimited admissions occupy slots a limited admission counts.
          const error = yield* Effect.flip(store.reserve(generateRunId(), limit(5), at(9)))
          assertError(error, new TooManyRuns({ tenant, running: 5 }))
        }),
      ))
  })

  describe("release", () => {
    test("gives the slot back, so another run is admitted", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const [a, b] = [generateRunId(), generateRunId()]
          yield* store.reserve(a, limit(1), at(1))
          yield* store.release(a)
          assert.strictEqual(yield* store.running(), 0)
          yield* store.reserve(b, limit(1), at(2))
          assert.strictEqual(yield* store.running(), 1)
        }),
      ))

    test("is idempotent, and releasing an unknown run succeeds and frees nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const [a, b] = [generateRunId(), generateRunId()]
          yield* store.reserve(a, unlimited, at(1))
          yield* store.reserve(b, unlimited, at(1))
          yield* store.release(a)
          yield* store.release(a)
          yield* store.release(generateRunId())
          assert.strictEqual(yield* store.running(), 1)
        }),
      ))
  })

  describe("running", () => {
    test("zero for a fresh tenant", () =>
      asFreshTenant(
        Effect.gen(function* () {
          assert.strictEqual(yield* (yield* QuotaStore).running(), 0)
        }),
      ))
  })
}
