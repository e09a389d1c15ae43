/**
 * G1: one tenant per call. A (run, effect) in two tenants is two timers, and no verb reaches a
 * neighbour's.
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { Tenant } from "../../../src/domain/Tenant.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant } from "../../support/Backend.js"
import { arm, claimDue, pending, pendingCount, type Tester, timer } from "./Fixtures.js"

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("another tenant's timers are never claimed, listed, counted or disarmed", () =>
      Effect.gen(function* () {
        const store = yield* TimerStore
        const a = freshTenant()
        const b = freshTenant()
        const mine = timer(10)
        const theirs = timer(20, { run: mine.run, effect: mine.effect })
        yield* arm(mine).pipe(Effect.provideService(Tenant, a))
        yield* arm(theirs, timer(30)).pipe(Effect.provideService(Tenant, b))
        const asA = <X, E, R>(e: Effect.Effect<X, E, R>) => Effect.provideService(e, Tenant, a)
        assert.deepStrictEqual(yield* asA(pending()), [mine])
        assert.strictEqual(yield* asA(pendingCount), 1)
        assert.deepStrictEqual(yield* asA(claimDue(100)), [mine])
        // b's copy of the same (run, effect) is unclaimed, still at its own fireAt.
        const bs = yield* claimDue(100).pipe(Effect.provideService(Tenant, b))
        assert.strictEqual(bs.length, 2)
        assert.deepStrictEqual(bs[0], theirs)
        yield* store.disarm(mine.run, mine.effect).pipe(Effect.provideService(Tenant, b))
        assert.deepStrictEqual(yield* asA(pending()), [mine])
        assert.strictEqual(yield* pendingCount.pipe(Effect.provideService(Tenant, b)), 1)
      }))
  })
}
