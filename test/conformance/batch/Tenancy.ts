/**
 * G1: one tenant per call. A batch id is per tenant, and no verb reaches a neighbour's batch.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateBatchId, generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { item, spend, succeeded, type Tester } from "./Fixtures.js"

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("one batch id in two tenants is two batches with their own plans", () =>
      Effect.gen(function* () {
        const store = yield* BatchStore
        const id = generateBatchId()
        const [a, b] = [freshTenant(), freshTenant()]
        yield* store.open(id, "plan-a").pipe(Effect.provideService(Tenant, a))
        yield* store.open(id, "plan-b").pipe(Effect.provideService(Tenant, b))
        assert.deepStrictEqual(
          yield* store.planDigest(id).pipe(Effect.provideService(Tenant, a)),
          Option.some("plan-a"),
        )
        assert.deepStrictEqual(
          yield* store.planDigest(id).pipe(Effect.provideService(Tenant, b)),
          Option.some("plan-b"),
        )
        yield* store.markExhausted(id).pipe(Effect.provideService(Tenant, a))
        assert.isFalse(yield* store.isExhausted(id).pipe(Effect.provideService(Tenant, b)))
      }))

    test("a neighbour's batch is invisible and untouchable", () =>
      Effect.gen(function* () {
        const store = yield* BatchStore
        const id = generateBatchId()
        const [a, b] = [freshTenant(), freshTenant()]
        const asA = Effect.provideService(Tenant, a)
        const asB = Effect.provideService(Tenant, b)
        yield* store.open(id, "plan-a").pipe(asA)
        yield* item(id, "0001", succeeded, spend(5, 5)).pipe(asA)
        yield* item(id, "0002").pipe(asA)
        yield* store.markExhausted(id).pipe(asA)

        assert.deepStrictEqual(yield* store.planDigest(id).pipe(asB), Option.none())
        assert.isFalse(yield* store.isExhausted(id).pipe(asB))
        assertError(yield* Effect.flip(store.markExhausted(id).pipe(asB)), new NotFound({ what: id }))
        assertError(
          yield* Effect.flip(store.reserve(id, "0003", generateRunId()).pipe(asB)),
          new NotFound({ what: id }),
        )
        assertError(
          yield* Effect.flip(store.record(id, "0001", succeeded, spend(9, 9)).pipe(asB)),
          new NotFound({ what: `${id}/0001` }),
        )
        assert.deepStrictEqual(yield* store.items(id, 10).pipe(asB), [])
        assert.deepStrictEqual(yield* store.cursor(id).pipe(asB), Option.none())
        assert.strictEqual((yield* store.census(id).pipe(asB)).succeeded, 0)

        // And the owner's rows are as it left them.
        const mine = yield* store.items(id, 10).pipe(asA)
        assert.deepStrictEqual(
          mine.map((r) => r.key),
          ["0001", "0002"],
        )
        assert.deepStrictEqual(mine[0]?.spend, spend(5, 5))
        assert.deepStrictEqual(yield* store.cursor(id).pipe(asA), Option.some("0001"))
      }))

    test("one item key in two tenants' same batch id keeps two runs", () =>
      Effect.gen(function* () {
        const store = yield* BatchStore
        const id = generateBatchId()
        const [a, b] = [freshTenant(), freshTenant()]
        const [ra, rb] = [generateRunId(), generateRunId()]
        yield* store.open(id, "p").pipe(Effect.provideService(Tenant, a))
        yield* store.open(id, "p").pipe(Effect.provideService(Tenant, b))
        assert.strictEqual((yield* store.reserve(id, "k", ra).pipe(Effect.provideService(Tenant, a))).run, ra)
        assert.strictEqual((yield* store.reserve(id, "k", rb).pipe(Effect.provideService(Tenant, b))).run, rb)
      }))
  })
}
