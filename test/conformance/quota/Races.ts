/**
 * The races QuotaStore settles (G5), fired from many fibers through a small pool. They prove
 * something where statements interleave (`concurrentWriters`); elsewhere they confirm serial
 * correctness with the same assertions.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { TooManyRuns } from "../../../src/errors/QuotaError.js"
import { QuotaStore } from "../../../src/services/QuotaStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend, freshTenant, onPool } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { fire, runs, shape } from "../../support/Races.js"
import { at, limit, pooled, spend, type Tester } from "./Fixtures.js"

/** N distinct runs reserve against `ceiling` at once: exactly min(N, ceiling) are admitted. */
const admitExactly = (fibers: number, ceiling: number) =>
  Effect.gen(function* () {
    const store = yield* QuotaStore
    const tenant = yield* Tenant
    const results = yield* fire(fibers, (i) => Effect.either(store.reserve(generateRunId(), limit(ceiling), at(i))))
    const admitted = results.filter((r) => r._tag === "Right").length
    const expected = Math.min(fibers, ceiling)
    assert.strictEqual(admitted, expected)
    for (const r of results) {
      if (r._tag === "Left") assertError(r.left, new TooManyRuns({ tenant, running: ceiling }))
    }
    assert.strictEqual(yield* store.running(), expected)
  })

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test("16 concurrent reservations against a limit of 4 admit exactly 4", () =>
      // Several rounds, each a fresh tenant: one round alone can pass by lucky scheduling.
      Effect.forEach(Array.from({ length: 8 }), () => asFreshTenant(admitExactly(16, 4)), { discard: true }).pipe(
        Effect.provide(pooled(backend, 4)),
      ))

    test.prop(
      "concurrent reservations of distinct runs against a limit of 4 admit exactly min(N, 4)",
      shape,
      ({ fibers, pool }) => admitExactly(fibers, 4).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent reservations of one run take one slot",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* QuotaStore
          const run = generateRunId()
          yield* fire(fibers, (i) => store.reserve(run, limit(1), at(i)))
          assert.strictEqual(yield* store.running(), 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "concurrent accruals sum exactly",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* QuotaStore
          yield* fire(fibers, (i) => store.accrue("2026-11", spend(i + 1, 2 * (i + 1))))
          const total = (fibers * (fibers + 1)) / 2
          assert.deepStrictEqual(yield* store.spent("2026-11"), spend(total, 2 * total))
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test("a halt set through one client is seen through another", () =>
      Effect.gen(function* () {
        const tenant = freshTenant()
        yield* Effect.flatMap(QuotaStore, (s) => s.setHalt(Option.some("incident"))).pipe(
          Effect.provideService(Tenant, tenant),
        )
        const seen = yield* Effect.flatMap(QuotaStore, (s) => s.halted()).pipe(
          Effect.provideService(Tenant, tenant),
          Effect.provide(pooled(backend, 2)),
        )
        assert.deepStrictEqual(seen, Option.some("incident"))
      }))
  })
}
