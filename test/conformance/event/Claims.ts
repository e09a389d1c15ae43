/**
 * Taking events: `claimFor` (a wait looks in the buffer), `matchWaiter` (an event looks for a
 * wait) and `deliverTo` (a reply names its run).
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { BufferedEvent, TargetedDelivery } from "../../../src/domain/Event.js"
import { generateRunId } from "../../../src/domain/Ids.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { asStored, at, buffered, effectKey, event, key, stored, type Tester, wait } from "./Fixtures.js"

const idOf = (found: Option.Option<BufferedEvent>) => Option.map(found, (b) => b.event.id)

export const claims = (test: Tester) => {
  describe("claimFor", () => {
    test("an early event waits for its waiter and comes back with all its stored keys", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "b"), key("case", "1")], { payload: { ok: true } })
          yield* buffered(e, 100)
          assert.deepStrictEqual(
            yield* store.claimFor(wait([key("doc", "b")]), at(500)),
            Option.some(new BufferedEvent({ event: stored(e), receivedAt: at(100) })),
          )
          // Claimed now: the sweep leaves it alone.
          assert.strictEqual(yield* store.sweepUnclaimed(at(1_000), "late"), 0)
        }),
      ))

    test("the first key with a hit wins, and on it the oldest event, ties by dedup key", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("b-old", [key("doc", "b")]), 10)
          yield* buffered(event("a-late", [key("doc", "a")]), 30)
          yield* buffered(event("a-y", [key("doc", "a")]), 20)
          yield* buffered(event("a-x", [key("doc", "a")]), 20)
          const sub = wait([key("doc", "none"), key("doc", "a"), key("doc", "b")])
          const taken = []
          for (let i = 0; i < 5; i++) taken.push(idOf(yield* store.claimFor(wait(sub.correlation), at(40))))
          assert.deepStrictEqual(taken, [
            Option.some("a-x"),
            Option.some("a-y"),
            Option.some("a-late"),
            Option.some("b-old"),
            Option.none(),
          ])
        }),
      ))

    test("only events of the wait's kind are taken", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a")], { kind: "invoice" }), 10)
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(20)), Option.none())
          assert.deepStrictEqual(
            idOf(yield* store.claimFor(wait([key("doc", "a")], { kind: "invoice" }), at(20))),
            Option.some("1"),
          )
        }),
      ))

    test("a run gets its own claimed event back, and another run never takes it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a"), key("doc", "b")]), 10)
          const run = generateRunId()
          assert.deepStrictEqual(
            idOf(yield* store.claimFor(wait([key("doc", "a")], { run }), at(20))),
            Option.some("1"),
          )
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(21)), Option.none())
          // The crashed run's next wait, another effect on another key, recovers it.
          assert.deepStrictEqual(
            idOf(yield* store.claimFor(wait([key("doc", "b")], { run }), at(22))),
            Option.some("1"),
          )
          assert.deepStrictEqual(
            idOf(yield* store.claimFor(wait([key("doc", "a")], { run }), at(23))),
            Option.some("1"),
          )
        }),
      ))

    test("no keys and no events give none", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a")]), 10)
          assert.deepStrictEqual(yield* store.claimFor(wait([]), at(20)), Option.none())
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "zz")]), at(20)), Option.none())
        }),
      ))
  })

  describe("matchWaiter", () => {
    test("an event that was never buffered matches nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a")])
          yield* store.subscribe(w, at(10))
          assert.deepStrictEqual(yield* store.matchWaiter(event("1", [key("doc", "a")]), at(20)), Option.none())
          assert.deepStrictEqual(yield* store.waiting(10), [w])
        }),
      ))

    test("claims for the earliest-registered wait, elects it and returns it as registered", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const newer = wait([key("doc", "a")])
          const older = wait([key("doc", "z"), key("doc", "a")], { step: 5, phase: "compensating" })
          yield* store.subscribe(newer, at(20))
          yield* store.subscribe(older, at(10))
          const e = event("1", [key("doc", "a")])
          yield* buffered(e, 30)
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(40)), Option.some(asStored(older)))
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(older), newer])
          assert.deepStrictEqual(yield* store.claimFor(newer, at(41)), Option.none())
          assert.deepStrictEqual(idOf(yield* store.claimFor(older, at(41))), Option.some("1"))
          // A repeat for the same event yields none and leaves the other wait alone.
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(42)), Option.none())
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(older), newer])
          // A second event skips the elected wait and takes the other.
          const e2 = event("2", [key("doc", "a")])
          yield* buffered(e2, 43)
          assert.deepStrictEqual(yield* store.matchWaiter(e2, at(44)), Option.some(newer))
        }),
      ))

    test("a tie on createdAt elects the lower run", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const [r1, r2] = [generateRunId(), generateRunId()]
          yield* store.subscribe(wait([key("doc", "a")], { run: r2 }), at(10))
          yield* store.subscribe(wait([key("doc", "a")], { run: r1 }), at(10))
          yield* buffered(event("1", [key("doc", "a")]), 30)
          const matched = yield* store.matchWaiter(event("1", [key("doc", "a")]), at(40))
          assert.deepStrictEqual(
            Option.map(matched, (s) => s.run),
            Option.some(r1),
          )
        }),
      ))

    test("keys are walked in the event's order", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const onA = wait([key("doc", "a")])
          const onB = wait([key("doc", "b")])
          yield* store.subscribe(onA, at(10))
          yield* store.subscribe(onB, at(20))
          const e = event("1", [key("doc", "nobody"), key("doc", "b"), key("doc", "a")])
          yield* buffered(e, 30)
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(40)), Option.some(onB))
          assert.deepStrictEqual(yield* store.waiting(10), [onA, onB])
        }),
      ))

    test("a claimed or dead event yields none and tries no further key", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const onA = wait([key("doc", "a")])
          const onB = wait([key("doc", "b")])
          yield* store.subscribe(onA, at(10))
          yield* store.subscribe(onB, at(10))
          const claimed = event("1", [key("doc", "a"), key("doc", "b")])
          const dead = event("2", [key("doc", "a"), key("doc", "b")])
          yield* buffered(claimed, 30)
          yield* store.claimFor(wait([key("doc", "a")]), at(31))
          yield* buffered(dead, 40)
          assert.strictEqual(yield* store.sweepUnclaimed(at(40), "late"), 1)
          assert.deepStrictEqual(yield* store.matchWaiter(claimed, at(50)), Option.none())
          assert.deepStrictEqual(yield* store.matchWaiter(dead, at(50)), Option.none())
          assert.deepStrictEqual(
            yield* store.waiting(10),
            [onA, onB].sort((x, y) => (x.run < y.run ? -1 : 1)),
          )
        }),
      ))

    test("a satisfied wait never takes a second event; the second stays live", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a")])
          yield* store.subscribe(w, at(10))
          const [first, second] = [event("1", [key("doc", "a")]), event("2", [key("doc", "a")])]
          yield* buffered(first, 20)
          yield* buffered(second, 20)
          assert.deepStrictEqual(yield* store.matchWaiter(first, at(30)), Option.some(w))
          assert.deepStrictEqual(yield* store.matchWaiter(second, at(30)), Option.none())
          assert.strictEqual(yield* store.sweepUnclaimed(at(30), "late"), 1)
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.event.id),
            ["2"],
          )
        }),
      ))

    test("only waits of the event's kind match", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "a")], { kind: "invoice" })
          yield* store.subscribe(w, at(10))
          const e = event("1", [key("doc", "a")])
          yield* buffered(e, 20)
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(30)), Option.none())
          assert.deepStrictEqual(yield* store.waiting(10), [w])
        }),
      ))
  })

  describe("deliverTo", () => {
    test("a run with no matching wait is NotWaiting and nothing is written", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          yield* store.subscribe(wait([key("doc", "a")], { run, kind: "invoice" }), at(10))
          yield* store.subscribe(wait([key("doc", "b")], { run }), at(10))
          yield* store.subscribe(wait([key("doc", "a")]), at(10))
          const e = event("1", [key("doc", "a")])
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(20)), TargetedDelivery.NotWaiting())
          assert.deepStrictEqual(yield* store.deliverTo(generateRunId(), e, at(20)), TargetedDelivery.NotWaiting())
          // Not buffered: it is still new.
          assert.isTrue(yield* store.buffer(e, at(30)))
        }),
      ))

    test("the answer carries every key of the wait, as waiting lists it, even keys of another kind", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const effect = effectKey()
          yield* store.subscribe(wait([key("doc", "1")], { run, effect, kind: "ack" }), at(10))
          yield* store.subscribe(wait([key("doc", "2")], { run, effect, kind: "reply" }), at(10))
          const [listed] = yield* store.waiting(10)
          const answer = yield* store.deliverTo(run, event("1", [key("doc", "2")], { kind: "reply" }), at(20))
          assert.deepStrictEqual(answer, TargetedDelivery.Matched({ subscription: listed ?? asStored(wait([])) }))
          assert.deepStrictEqual(listed?.correlation.map(String), ["doc=1", "doc=2"])
        }),
      ))

    test("the wait with the lowest effect key holding a key matches, with all its keys", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const [low, mid, high] = [effectKey(), effectKey(), effectKey()].sort()
          const lowWait = wait([key("doc", "other")], { run, effect: low ?? effectKey() })
          const midWait = wait([key("doc", "z"), key("doc", "b")], { run, effect: mid ?? effectKey(), step: 4 })
          const highWait = wait([key("doc", "a")], { run, effect: high ?? effectKey() })
          yield* store.subscribe(highWait, at(5))
          yield* store.subscribe(midWait, at(10))
          yield* store.subscribe(lowWait, at(10))
          const e = event("1", [key("doc", "a"), key("doc", "b")])
          const matched = TargetedDelivery.Matched({ subscription: asStored(midWait) })
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(20)), matched)
          // Stored claimed by the run from the start, with `receivedAt` = the delivery instant.
          assert.isFalse(yield* store.buffer(e, at(21)))
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 0)
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(22)), Option.none())
          assert.deepStrictEqual(
            yield* store.claimFor(wait([key("doc", "a")], { run }), at(23)),
            Option.some(new BufferedEvent({ event: stored(e), receivedAt: at(20) })),
          )
          // Never deletes a wait; a retry of the same delivery is answered again.
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(highWait), lowWait, asStored(midWait)])
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(30)), matched)
        }),
      ))

    test("an accepted key not claimed by this run is Duplicate, and nothing is written", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const [mine, theirs] = [generateRunId(), generateRunId()]
          yield* store.subscribe(wait([key("doc", "a")], { run: mine }), at(10))
          yield* store.subscribe(wait([key("doc", "a")], { run: theirs }), at(10))
          const buffered1 = event("buffered", [key("doc", "a")])
          yield* buffered(buffered1, 20)
          assert.deepStrictEqual(yield* store.deliverTo(mine, buffered1, at(30)), TargetedDelivery.Duplicate())
          const taken = event("taken", [key("doc", "a")])
          assert.strictEqual((yield* store.deliverTo(theirs, taken, at(30)))._tag, "Matched")
          assert.deepStrictEqual(yield* store.deliverTo(mine, taken, at(31)), TargetedDelivery.Duplicate())
          // The buffered one is still unclaimed and live; the other is still theirs.
          assert.strictEqual(yield* store.sweepUnclaimed(at(40), "late"), 1)
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.event.id),
            ["buffered"],
          )
        }),
      ))

    test("this run's accepted event without a candidate wait any more is Duplicate", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const w = wait([key("doc", "a")], { run })
          yield* store.subscribe(w, at(10))
          const e = event("1", [key("doc", "a")], { payload: "p" })
          assert.strictEqual((yield* store.deliverTo(run, e, at(20)))._tag, "Matched")
          yield* store.unsubscribe(run, w.effect)
          assert.deepStrictEqual(yield* store.deliverTo(run, e, at(30)), TargetedDelivery.Duplicate())
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(w, at(31)), (b) => b.event.payload),
            Option.some(null),
          )
        }),
      ))

    test("the same id from another source is a new delivery", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          yield* store.subscribe(wait([key("doc", "a")], { run }), at(10))
          yield* buffered(event("1", [key("doc", "a")], { source: "mail" }), 15)
          const fromWeb = event("1", [key("doc", "a")], { source: "web" })
          assert.strictEqual((yield* store.deliverTo(run, fromWeb, at(20)))._tag, "Matched")
        }),
      ))
  })
}
