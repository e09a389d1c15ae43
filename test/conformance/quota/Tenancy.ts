/**
 * G1: one tenant per call. The running set, the stop and the spend are each tenant's own.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { ZERO } from "../../../src/domain/Quota.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant } from "../../support/Backend.js"
import { at, limit, spend, type Tester } from "./Fixtures.js"

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("a neighbour's running runs neither count against nor are released by another tenant", () =>
      Effect.gen(function* () {
        const store = yield* QuotaStore
        const [a, b] = [freshTenant(), freshTenant()]
        const asA = Effect.provideService(Tenant, a)
        const asB = Effect.provideService(Tenant, b)
        const run = generateRunId()
        yield* store.reserve(run, limit(1), at(1)).pipe(asA)
        assert.strictEqual(yield* store.running().pipe(asB), 0)
        // The same run id is a separate member in another tenant, and B's ceiling is B's own.
        yield* store.reserve(run, limit(1), at(1)).pipe(asB)
        yield* store.release(run).pipe(asB)
        assert.strictEqual(yield* store.running().pipe(asA), 1)
        assert.strictEqual(yield* store.running().pipe(asB), 0)
      }))

    test("a halt stops its own tenant only", () =>
      Effect.gen(function* () {
        const store = yield* QuotaStore
        const [a, b] = [freshTenant(), freshTenant()]
        yield* store.setHalt(Option.some("stop")).pipe(Effect.provideService(Tenant, a))
        assert.deepStrictEqual(yield* store.halted().pipe(Effect.provideService(Tenant, b)), Option.none())
        yield* store.setHalt(Option.none()).pipe(Effect.provideService(Tenant, b))
        assert.deepStrictEqual(yield* store.halted().pipe(Effect.provideService(Tenant, a)), Option.some("stop"))
      }))

    test("spend is accrued per tenant", () =>
      Effect.gen(function* () {
        const store = yield* QuotaStore
        const [a, b] = [freshTenant(), freshTenant()]
        yield* store.accrue("2026-11", spend(10, 1)).pipe(Effect.provideService(Tenant, a))
        assert.deepStrictEqual(yield* store.spent("2026-11").pipe(Effect.provideService(Tenant, b)), ZERO)
        yield* store.accrue("2026-11", spend(3, 3)).pipe(Effect.provideService(Tenant, b))
        assert.deepStrictEqual(yield* store.spent("2026-11").pipe(Effect.provideService(Tenant, a)), spend(10, 1))
      }))
  })
}
