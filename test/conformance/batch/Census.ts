/**
 * `census`: counts per outcome in SQL, in-flight for no outcome, spend over every item.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { BatchCensus } from "../../../src/domain/Batch.js"
import { generateBatchId } from "../../../src/domain/Ids.js"
import { ZERO } from "../../../src/domain/Quota.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
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

const empty = new BatchCensus({
  succeeded: 0,
  failed: 0,
  quarantined: 0,
  suspended: 0,
  exhausted: 0,
  inFlight: 0,
  spend: ZERO,
})

export const census = (test: Tester) => {
  describe("census", () => {
    test("zero everywhere for an empty or missing batch", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          assert.deepStrictEqual(yield* store.census(b), empty)
          assert.deepStrictEqual(yield* store.census(generateBatchId()), empty)
        }),
      ))

    test("counts each outcome, no outcome as in flight, and sums spend over every item", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const [b, other] = [yield* openBatch(), yield* openBatch()]
          yield* item(b, "01", succeeded, spend(1, 2))
          yield* item(b, "02", succeeded, spend(10, 20))
          yield* item(b, "03", failed(), spend(100, 200))
          yield* item(b, "04", quarantined(), spend(1000, 2000))
          yield* item(b, "05", suspended(), spend(10_000, 20_000))
          yield* item(b, "06", exhausted(), spend(100_000, 200_000))
          yield* item(b, "07", exhausted(), spend(0, 0))
          yield* item(b, "08")
          yield* item(b, "09")
          yield* item(b, "10")
          yield* item(other, "01", succeeded, spend(5, 5))
          assert.deepStrictEqual(
            yield* store.census(b),
            new BatchCensus({
              succeeded: 2,
              failed: 1,
              quarantined: 1,
              suspended: 1,
              exhausted: 2,
              inFlight: 3,
              spend: spend(111_111, 222_222),
            }),
          )
        }),
      ))

    test("an item counts under its last outcome with its last spend", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          yield* item(b, "01", suspended(), spend(50, 5))
          yield* store.record(b, "01", succeeded, spend(70, 7))
          const c = yield* store.census(b)
          assert.strictEqual(c.suspended, 0)
          assert.strictEqual(c.succeeded, 1)
          assert.deepStrictEqual(c.spend, spend(70, 7))
        }),
      ))

    test("spend saturates at MAX_SAFE_INTEGER", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const max = Number.MAX_SAFE_INTEGER
          yield* item(b, "01", succeeded, spend(max, 1))
          yield* item(b, "02", succeeded, spend(max, 2))
          yield* item(b, "03", failed(), spend(max, 3))
          assert.deepStrictEqual((yield* store.census(b)).spend, spend(max, 6))
        }),
      ))

    test("spend saturates even where the plain integer sum would overflow 64 bits", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* BatchStore
          const b = yield* openBatch()
          const max = Number.MAX_SAFE_INTEGER
          // 1,100 items at MAX_SAFE_INTEGER sum past 2^63: SQLite's integer SUM raises there.
          yield* Effect.forEach(
            Array.from({ length: 1_100 }, (_, i) => String(i).padStart(5, "0")),
            (k) => item(b, k, succeeded, spend(max, 1)),
            { concurrency: 4, discard: true },
          )
          assert.deepStrictEqual((yield* store.census(b)).spend, spend(max, 1_100))
        }),
      ))
  })
}
