/**
 * Elected waits (issue 16): an event that takes a wait marks it elected rather than deleting it,
 * so a run whose process died between the election and its wake is still found by redelivery
 * (`waiting` → `claimFor`), and no second event can take the same wait.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TargetedDelivery } from "../../../src/domain/Event.js"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Acceptance, EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { asStored, at, buffered, event, key, stored, type Tester, wait } from "./Fixtures.js"

export const elections = (test: Tester) => {
  describe("elected waits", () => {
    test("a second event cannot elect an elected wait: it goes to the next wait, or is buffered", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const [w1, w2] = [wait([key("doc", "a")]), wait([key("doc", "a")])]
          yield* store.subscribe(w1, at(10))
          yield* store.subscribe(w2, at(20))
          const matched = (w: typeof w1) => Acceptance.Matched({ subscription: asStored(w) })
          assert.deepStrictEqual(yield* store.accept(event("1", [key("doc", "a")]), at(30)), matched(w1))
          assert.deepStrictEqual(yield* store.accept(event("2", [key("doc", "a")]), at(31)), matched(w2))
          assert.deepStrictEqual(yield* store.accept(event("3", [key("doc", "a")]), at(32)), Acceptance.Buffered())
          const e4 = event("4", [key("doc", "a")])
          yield* buffered(e4, 33)
          assert.deepStrictEqual(yield* store.matchWaiter(e4, at(34)), Option.none())
          // Neither election took the unmatched events: both are still free for the sweep.
          assert.strictEqual(yield* store.sweepUnclaimed(at(40), "late"), 2)
        }),
      ))

    test("a key subscribed to an elected wait afterwards does not let a second event elect it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a")])
          yield* store.subscribe(w, at(10))
          assert.strictEqual((yield* store.accept(event("1", [key("doc", "a")]), at(20)))._tag, "Matched")
          yield* store.subscribe(wait([key("doc", "b")], { run: w.run, effect: w.effect }), at(21))
          assert.deepStrictEqual(yield* store.accept(event("2", [key("doc", "b")]), at(22)), Acceptance.Buffered())
          const e3 = event("3", [key("doc", "b")])
          yield* buffered(e3, 23)
          assert.deepStrictEqual(yield* store.matchWaiter(e3, at(24)), Option.none())
        }),
      ))

    test("an elected wait stays in waiting, and claimFor hands its run the electing event (redelivery)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "b"), key("doc", "a")])
          yield* store.subscribe(w, at(10))
          const e = event("1", [key("doc", "a")], { payload: { n: 1 } })
          assert.deepStrictEqual(yield* store.accept(e, at(20)), Acceptance.Matched({ subscription: asStored(w) }))
          // What redelivery does after a crash before the wake: walk `waiting`, claimFor each.
          const [listed] = yield* store.waiting(10)
          assert.deepStrictEqual(listed, asStored(w))
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(listed ?? w, at(30)), (b) => b.event),
            Option.some(stored(e)),
          )
          // And again: the claim is the run's, so a second crash is recovered the same way.
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(listed ?? w, at(31)), (b) => b.event.id),
            Option.some("1"),
          )
        }),
      ))

    test("unsubscribe deletes an elected wait with all its rows; its key then buffers", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a"), key("doc", "b")])
          yield* store.subscribe(w, at(10))
          assert.strictEqual((yield* store.accept(event("1", [key("doc", "a")]), at(20)))._tag, "Matched")
          yield* store.unsubscribe(w.run, w.effect)
          assert.deepStrictEqual(yield* store.waiting(10), [])
          assert.deepStrictEqual(yield* store.accept(event("2", [key("doc", "b")]), at(30)), Acceptance.Buffered())
          // The same (run, effect) registered anew after its unsubscribe is a fresh, unelected wait.
          yield* store.subscribe(w, at(40))
          assert.deepStrictEqual(
            yield* store.accept(event("3", [key("doc", "a")]), at(41)),
            Acceptance.Matched({ subscription: asStored(w) }),
          )
        }),
      ))

    test("subscribe again keeps the election: the wait is listed once and no event elects it anew", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a")])
          yield* store.subscribe(w, at(10))
          assert.strictEqual((yield* store.accept(event("1", [key("doc", "a")]), at(20)))._tag, "Matched")
          // What the engine does when the run's owner is busy: put the wait back.
          yield* store.subscribe(w, at(25))
          assert.deepStrictEqual(yield* store.waiting(10), [w])
          assert.deepStrictEqual(yield* store.accept(event("2", [key("doc", "a")]), at(30)), Acceptance.Buffered())
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(w, at(31)), (b) => b.event.id),
            Option.some("1"),
          )
        }),
      ))

    test("deliverTo elects as accept does: neither takes a wait the other elected; its retry still matches", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const w = wait([key("doc", "a")], { run })
          yield* store.subscribe(w, at(10))
          const e = event("1", [key("doc", "a")])
          const matched = TargetedDelivery.Matched({ subscription: w })
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(20)), matched)
          assert.deepStrictEqual(yield* store.accept(event("2", [key("doc", "a")]), at(21)), Acceptance.Buffered())
          assert.deepStrictEqual(
            yield* store.deliverTo(run, event("3", [key("doc", "a")]), at(22)),
            TargetedDelivery.NotWaiting(),
          )
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(23)), matched)
          assert.deepStrictEqual(yield* store.waiting(10), [w])
          // The reverse: a wait `accept` elected takes no targeted event.
          const other = wait([key("doc", "b")], { run })
          yield* store.subscribe(other, at(30))
          assert.strictEqual((yield* store.accept(event("4", [key("doc", "b")]), at(31)))._tag, "Matched")
          assert.deepStrictEqual(
            yield* store.deliverTo(run, event("5", [key("doc", "b")]), at(32)),
            TargetedDelivery.NotWaiting(),
          )
        }),
      ))
  })
}
