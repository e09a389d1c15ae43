/**
 * Items: `reserve` keeps the first run, `record` overwrites, `items` reads in key order.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ItemRecord } from "../../../src/domain/Batch.js"
import { generateBatchId, generateRunId } from "../../../src/domain/Ids.js"
import { ZERO } from "../../../src/domain/Quota.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import {
  exhausted,
  failed,
  item,
  openBatch,
  quarantined,
  spend,
  succeeded,
  suspended,
  type Tester,
} from "./Fixtures.js"

export const items = (test: Tester) => {
  describe("reserve", () => {
    test("a new item is reserved for the run, with no outcome and zero spend", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const run = generateRunId()
          const got = yield* store.reserve(b, "0001", run)
          assert.deepStrictEqual(got, new ItemRecord({ key: "0001", run, outcome: Option.none(), spend: ZERO }))
        }),
      ))

    test("a repeat returns the run reserved first", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const [first, second] = [generateRunId(), generateRunId()]
          yield* store.reserve(b, "0001", first)
          const again = yield* store.reserve(b, "0001", second)
          assert.strictEqual(again.run, first)
          assert.deepStrictEqual(again.outcome, Option.none())
        }),
      ))

    test("a repeat after an outcome returns the first run with its outcome and spend", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const first = generateRunId()
          yield* store.reserve(b, "0001", first)
          yield* store.record(b, "0001", suspended("waiting"), spend(120, 7))
          const again = yield* store.reserve(b, "0001", generateRunId())
          assert.deepStrictEqual(
            again,
            new ItemRecord({
              key: "0001",
              run: first,
              outcome: Option.some(suspended("waiting")),
              spend: spend(120, 7),
            }),
          )
        }),
      ))

    test("reserving in a missing batch is NotFound naming the batch", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = generateBatchId()
          assertError(yield* Effect.flip(store.reserve(b, "0001", generateRunId())), new NotFound({ what: b }))
          assert.deepStrictEqual(yield* store.items(b, 10), [])
        }),
      ))
  })

  describe("record", () => {
    test("every outcome round-trips with its detail", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const outcomes = [succeeded, failed("x"), quarantined("y"), suspended("z"), exhausted("steps")]
          for (const [i, outcome] of outcomes.entries()) yield* item(b, `k${i}`, outcome, spend(i, i * 10))
          const read = yield* store.items(b, 10)
          assert.deepStrictEqual(
            read.map((r) => r.outcome),
            outcomes.map(Option.some),
          )
          assert.deepStrictEqual(
            read.map((r) => r.spend),
            outcomes.map((_, i) => spend(i, i * 10)),
          )
        }),
      ))

    test("a second record overwrites outcome, detail and spend, never adding", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          yield* item(b, "0001", failed("first"), spend(100, 50))
          yield* store.record(b, "0001", quarantined("second"), spend(30, 5))
          const [got] = yield* store.items(b, 10)
          assert.deepStrictEqual(got?.outcome, Option.some(quarantined("second")))
          assert.deepStrictEqual(got?.spend, spend(30, 5))
          yield* store.record(b, "0001", succeeded, spend(1, 1))
          const [after] = yield* store.items(b, 10)
          assert.deepStrictEqual(after?.outcome, Option.some(succeeded))
          assert.deepStrictEqual(after?.spend, spend(1, 1))
        }),
      ))

    test("recording an unreserved key is NotFound naming <batch>/<key>", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          yield* item(b, "0001")
          assertError(yield* Effect.flip(store.record(b, "0002", succeeded, ZERO)), new NotFound({ what: `${b}/0002` }))
          const missing = generateBatchId()
          assertError(
            yield* Effect.flip(store.record(missing, "0001", succeeded, ZERO)),
            new NotFound({ what: `${missing}/0001` }),
          )
        }),
      ))

    test("spend up to MAX_SAFE_INTEGER is stored exactly", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const max = Number.MAX_SAFE_INTEGER
          yield* item(b, "0001", succeeded, spend(max, max))
          const [got] = yield* store.items(b, 1)
          assert.deepStrictEqual(got?.spend, spend(max, max))
        }),
      ))
  })

  describe("items", () => {
    test("key ascending, at most limit, only this batch's", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const [b, other] = [yield* openBatch(), yield* openBatch()]
          for (const k of ["0003", "0001", "0004", "0002"]) yield* item(b, k)
          yield* item(other, "0000")
          assert.deepStrictEqual(
            (yield* store.items(b, 10)).map((r) => r.key),
            ["0001", "0002", "0003", "0004"],
          )
          assert.deepStrictEqual(
            (yield* store.items(b, 2)).map((r) => r.key),
            ["0001", "0002"],
          )
        }),
      ))

    test("a limit of 0 returns an empty list", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          yield* item(b, "0001")
          assert.deepStrictEqual(yield* store.items(b, 0), [])
        }),
      ))

    test("a missing batch has no items", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          assert.deepStrictEqual(yield* store.items(generateBatchId(), 10), [])
        }),
      ))
  })
}
