/**
 * G1: one tenant per call. Event identities and waits are per tenant; one tenant's event never
 * wakes another tenant's run.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TargetedDelivery } from "../../../src/domain/Event.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant } from "../../support/Backend.js"
import { at, event, key, type Tester, wait } from "./Fixtures.js"

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("one tenant's event never matches another tenant's waiter", () =>
      Effect.gen(function* () {
        const store = yield* EventStore
        const [a, b] = [freshTenant(), freshTenant()]
        const w = wait([key("doc", "shared")])
        const e = event("1", [key("doc", "shared")])
        yield* store.subscribe(w, at(10)).pipe(Effect.provideService(Tenant, a))
        const inB = Effect.provideService(Tenant, b)
        assert.isTrue(yield* store.buffer(e, at(20)).pipe(inB))
        assert.deepStrictEqual(yield* store.matchWaiter(e, at(30)).pipe(inB), Option.none())
        const reply = event("2", [key("doc", "shared")])
        assert.deepStrictEqual(yield* store.deliverTo(w.run, reply, at(30)).pipe(inB), TargetedDelivery.NotWaiting())
        assert.deepStrictEqual(yield* store.claimFor(w, at(30)).pipe(Effect.provideService(Tenant, a)), Option.none())
        assert.deepStrictEqual(yield* store.waiting(10).pipe(Effect.provideService(Tenant, a)), [w])
        // B's event is still unclaimed in B.
        assert.strictEqual(yield* store.sweepUnclaimed(at(30), "late").pipe(inB), 1)
      }))

    test("waiting and deadLetters never list another tenant's rows", () =>
      Effect.gen(function* () {
        const store = yield* EventStore
        const [a, b] = [freshTenant(), freshTenant()]
        const inA = Effect.provideService(Tenant, a)
        const inB = Effect.provideService(Tenant, b)
        yield* store.subscribe(wait([key("doc", "x")]), at(10)).pipe(inA)
        yield* store.buffer(event("1", [key("doc", "x")]), at(10)).pipe(inA)
        yield* store.sweepUnclaimed(at(10), "late").pipe(inA)
        assert.deepStrictEqual(yield* store.waiting(10).pipe(inB), [])
        assert.deepStrictEqual(yield* store.deadLetters(10).pipe(inB), [])
        assert.strictEqual(yield* store.sweepUnclaimed(at(10), "late").pipe(inB), 0)
      }))

    test("one dedup key in two tenants is two events, erased and unsubscribed apart", () =>
      Effect.gen(function* () {
        const store = yield* EventStore
        const [a, b] = [freshTenant(), freshTenant()]
        const inA = Effect.provideService(Tenant, a)
        const inB = Effect.provideService(Tenant, b)
        const e = event("1", [key("doc", "x")], { payload: "kept" })
        const w = wait([key("doc", "x")])
        assert.isTrue(yield* store.buffer(e, at(10)).pipe(inA))
        assert.isTrue(yield* store.buffer(e, at(10)).pipe(inB))
        yield* store.claimFor(w, at(11)).pipe(inA)
        yield* store.claimFor(w, at(11)).pipe(inB)
        assert.isTrue(yield* store.erasePayload("mail", "1").pipe(inB))
        yield* store.unsubscribe(w.run, w.effect).pipe(inB)
        assert.deepStrictEqual(
          Option.map(yield* store.claimFor(w, at(12)).pipe(inA), (c) => c.event.payload),
          Option.some("kept"),
        )
      }))
  })
}
