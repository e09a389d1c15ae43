/**
 * Spend per period: `accrue` adds in one upsert, saturating; `spent` reads; `checkSpend` refuses
 * at the limit.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { checkSpend, TenantQuota, ZERO } from "../../../src/domain/Quota.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { SpentOut } from "../../../src/errors/QuotaError.js"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { spend as amount, type Tester } from "./Fixtures.js"

export const spend = (test: Tester) => {
  describe("accrue / spent", () => {
    test("zero for an untouched period", () =>
      asFreshTenant(
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* (yield* QuotaStore).spent("2026-11"), ZERO)
        }),
      ))

    test("accruals sum per unit", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* store.accrue("2026-11", amount(100, 7))
          yield* store.accrue("2026-11", amount(50, 0))
          yield* store.accrue("2026-11", amount(0, 3))
          assert.deepStrictEqual(yield* store.spent("2026-11"), amount(150, 10))
        }),
      ))

    test("periods are independent", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* store.accrue("2026-11", amount(100, 7))
          yield* store.accrue("2026-12", amount(1, 1))
          yield* store.accrue("2026-11-30", amount(5, 5))
          assert.deepStrictEqual(yield* store.spent("2026-11"), amount(100, 7))
          assert.deepStrictEqual(yield* store.spent("2026-12"), amount(1, 1))
          assert.deepStrictEqual(yield* store.spent("2026-11-30"), amount(5, 5))
          assert.deepStrictEqual(yield* store.spent("2027-01"), ZERO)
        }),
      ))

    test("accruing zero leaves the total as it was", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* store.accrue("2026-11", amount(5, 3))
          yield* store.accrue("2026-11", ZERO)
          assert.deepStrictEqual(yield* store.spent("2026-11"), amount(5, 3))
        }),
      ))

    test("saturates at MAX_SAFE_INTEGER, per unit", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const max = Number.MAX_SAFE_INTEGER
          yield* store.accrue("2026-11", amount(max - 1, 10))
          yield* store.accrue("2026-11", amount(5, 20))
          assert.deepStrictEqual(yield* store.spent("2026-11"), amount(max, 30))
          yield* store.accrue("2026-11", amount(max, max))
          assert.deepStrictEqual(yield* store.spent("2026-11"), amount(max, max))
        }),
      ))

    test("reaching a limit with accrued spend refuses, tokens checked first", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const tenant = yield* Tenant
          const quota = new TenantQuota({
            maxConcurrentRuns: Option.none(),
            maxTokensPerPeriod: Option.some(100),
            maxMinorUnitsPerPeriod: Option.some(10),
            period: "monthly",
          })
          yield* store.accrue("2026-11", amount(99, 9))
          assert.isTrue(Either.isRight(checkSpend(tenant, "2026-11", quota, yield* store.spent("2026-11"))))
          yield* store.accrue("2026-11", amount(0, 1))
          const minor = checkSpend(tenant, "2026-11", quota, yield* store.spent("2026-11"))
          assertError(
            Either.isLeft(minor) ? minor.left : undefined,
            new SpentOut({ tenant, period: "2026-11", unit: "minor units", spent: 10, limit: 10 }),
          )
          yield* store.accrue("2026-11", amount(1, 0))
          const tokens = checkSpend(tenant, "2026-11", quota, yield* store.spent("2026-11"))
          assertError(
            Either.isLeft(tokens) ? tokens.left : undefined,
            new SpentOut({ tenant, period: "2026-11", unit: "tokens", spent: 100, limit: 100 }),
          )
        }),
      ))
  })
}
