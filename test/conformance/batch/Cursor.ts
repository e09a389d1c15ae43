/**
 * `cursor`: the end of the contiguous terminal prefix. Suspended, exhausted and unfinished items
 * hold it back; settled items after them do not move it.
 */
import { describe } from "@effect/vitest"
import { Effect, FastCheck, Option } from "effect"
import type { ItemOutcome } from "../../../src/domain/Batch.js"
import { generateBatchId } from "../../../src/domain/Ids.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { exhausted, failed, item, openBatch, quarantined, succeeded, suspended, type Tester } from "./Fixtures.js"

/** The spec's definition, on a model: f = smallest unsettled key; with f the largest key below it, else the largest. */
const model = (rows: ReadonlyArray<readonly [string, ItemOutcome | undefined]>): Option.Option<string> => {
  const keys = rows.map(([k]) => k).sort()
  const unsettled = rows
    .filter(([, o]) => o === undefined || o._tag === "Suspended" || o._tag === "Exhausted")
    .map(([k]) => k)
    .sort()
  const f = unsettled[0]
  const below = f === undefined ? keys : keys.filter((k) => k < f)
  return Option.fromNullable(below[below.length - 1])
}

const Outcome = FastCheck.constantFrom<ItemOutcome | undefined>(
  undefined,
  succeeded,
  failed(),
  quarantined(),
  suspended(),
  exhausted(),
)

export const cursor = (test: Tester) => {
  describe("cursor", () => {
    const at = (rows: ReadonlyArray<readonly [string, ItemOutcome | undefined]>) =>
      asFreshTenant(
        Effect.gen(function* () {
          const b = yield* openBatch()
          for (const [k, o] of rows) yield* item(b, k, o)
          return yield* Effect.flatMap(BatchStore, (s) => s.cursor(b))
        }),
      )

    test("none when the batch has no items, or does not exist", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* at([]), Option.none())
        const missing = yield* asFreshTenant(Effect.flatMap(BatchStore, (s) => s.cursor(generateBatchId())))
        assert.deepStrictEqual(missing, Option.none())
      }))

    test("all settled: the largest key", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0002", failed()],
          ["0001", succeeded],
          ["0003", quarantined()],
        ])
        assert.deepStrictEqual(c, Option.some("0003"))
      }))

    test("an unfinished item holds it at the key before it, past settled items after it", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0001", succeeded],
          ["0002", succeeded],
          ["0003", undefined],
          ["0004", succeeded],
        ])
        assert.deepStrictEqual(c, Option.some("0002"))
      }))

    test("a suspended item holds it back", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0001", succeeded],
          ["0002", suspended()],
          ["0003", failed()],
        ])
        assert.deepStrictEqual(c, Option.some("0001"))
      }))

    test("an exhausted item holds it back", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0001", quarantined()],
          ["0002", exhausted()],
          ["0003", succeeded],
        ])
        assert.deepStrictEqual(c, Option.some("0001"))
      }))

    test("none when the smallest key is unsettled", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0001", suspended()],
          ["0002", succeeded],
        ])
        assert.deepStrictEqual(c, Option.none())
      }))

    test("failed and quarantined are settled and let it pass", () =>
      Effect.gen(function* () {
        const c = yield* at([
          ["0001", failed()],
          ["0002", quarantined()],
          ["0003", undefined],
        ])
        assert.deepStrictEqual(c, Option.some("0002"))
      }))

    test.prop(
      "matches the definition for any set of keys and outcomes",
      {
        rows: FastCheck.uniqueArray(FastCheck.tuple(FastCheck.integer({ min: 0, max: 40 }), Outcome), {
          maxLength: 12,
          selector: ([k]) => k,
        }),
      },
      ({ rows }) =>
        Effect.gen(function* () {
          const keyed = rows.map(([k, o]) => [String(k).padStart(4, "0"), o] as const)
          assert.deepStrictEqual(yield* at(keyed), model(keyed))
        }),
      { fastCheck: { numRuns: 25 } },
    )
  })
}
