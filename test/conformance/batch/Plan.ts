/**
 * A batch is frozen to one plan: `open`, `planDigest`, `markExhausted`, `isExhausted`.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateBatchId } from "../../../src/domain/Ids.js"
import { BatchPlanChanged, NotFound } from "../../../src/errors/StoreError.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import type { Tester } from "./Fixtures.js"

export const plan = (test: Tester) => {
  describe("open", () => {
    test("creates the batch with its digest", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          yield* store.open(id, "plan-a")
          assert.deepStrictEqual(yield* store.planDigest(id), Option.some("plan-a"))
        }),
      ))

    test("reopening with the same digest succeeds and changes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          yield* store.open(id, "plan-a")
          yield* store.markExhausted(id)
          yield* store.open(id, "plan-a")
          assert.deepStrictEqual(yield* store.planDigest(id), Option.some("plan-a"))
          assert.isTrue(yield* store.isExhausted(id))
        }),
      ))

    test("reopening with another digest is BatchPlanChanged and the first digest stands", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          yield* store.open(id, "plan-a")
          const error = yield* Effect.flip(store.open(id, "plan-b"))
          assertError(error, new BatchPlanChanged({ batch: id, stored: "plan-a", offered: "plan-b" }))
          assert.deepStrictEqual(yield* store.planDigest(id), Option.some("plan-a"))
        }),
      ))
  })

  describe("planDigest", () => {
    test("none for a batch that does not exist", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          assert.deepStrictEqual(yield* store.planDigest(generateBatchId()), Option.none())
        }),
      ))
  })

  describe("markExhausted / isExhausted", () => {
    test("a new batch is not exhausted; marking makes it so, and marking again succeeds", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          yield* store.open(id, "plan-a")
          assert.isFalse(yield* store.isExhausted(id))
          yield* store.markExhausted(id)
          assert.isTrue(yield* store.isExhausted(id))
          yield* store.markExhausted(id)
          assert.isTrue(yield* store.isExhausted(id))
        }),
      ))

    test("marking a missing batch is NotFound", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const id = generateBatchId()
          assertError(yield* Effect.flip(store.markExhausted(id)), new NotFound({ what: id }))
        }),
      ))

    test("an unknown batch reads false", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          assert.isFalse(yield* store.isExhausted(generateBatchId()))
        }),
      ))

    test("marking one batch leaves another unmarked", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const [a, b] = [generateBatchId(), generateBatchId()]
          yield* store.open(a, "plan-a")
          yield* store.open(b, "plan-a")
          yield* store.markExhausted(a)
          assert.isFalse(yield* store.isExhausted(b))
        }),
      ))
  })
}
