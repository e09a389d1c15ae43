/**
 * Registered waits: `subscribe`, `waiting` and `unsubscribe`.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { BufferedEvent } from "../../../src/domain/Event.js"
import { generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { asStored, at, buffered, effectKey, event, key, stored, type Tester, wait } from "./Fixtures.js"

export const waits = (test: Tester) => {
  describe("subscribe", () => {
    test("a subscription with no keys writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* store.subscribe(wait([]), at(10))
          assert.deepStrictEqual(yield* store.waiting(10), [])
        }),
      ))

    test("every key of the wait is registered, with its case, step and phase", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const w = wait([key("doc", "b"), key("doc", "a")], { case: generateCaseId(), step: 7, phase: "compensating" })
          yield* store.subscribe(w, at(10))
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(w)])
        }),
      ))

    test("a repeat keeps the rows present with their first createdAt", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const early = wait([key("doc", "a")])
          const later = wait([key("doc", "b")])
          yield* store.subscribe(early, at(10))
          yield* store.subscribe(later, at(20))
          yield* store.subscribe(early, at(30))
          yield* store.subscribe(wait([key("doc", "a")], { run: later.run, effect: later.effect, step: 99 }), at(5))
          // `later` keeps its first row's description and gains the new key, and its earliest row now dates 5.
          assert.deepStrictEqual(yield* store.waiting(10), [
            asStored(wait([key("doc", "a"), key("doc", "b")], { run: later.run, effect: later.effect, step: 99 })),
            asStored(early),
          ])
        }),
      ))
  })

  describe("waiting", () => {
    test("one element per (run, effect) with all its keys, oldest first, limit counting waits", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const three = wait([key("doc", "c"), key("doc", "a"), key("case", "z")], { run })
          const two = wait([key("doc", "a"), key("doc", "b")], { run })
          const one = wait([key("doc", "x")])
          yield* store.subscribe(two, at(20))
          yield* store.subscribe(three, at(10))
          yield* store.subscribe(one, at(30))
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(three), asStored(two), asStored(one)])
          assert.deepStrictEqual(yield* store.waiting(2), [asStored(three), asStored(two)])
          assert.deepStrictEqual(yield* store.waiting(1), [asStored(three)])
          assert.deepStrictEqual(yield* store.waiting(0), [])
        }),
      ))

    test("a tie on createdAt breaks on run, then effect", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const [r1, r2] = [generateRunId(), generateRunId()]
          const [e1, e2] = [effectKey(), effectKey()].sort()
          const last = wait([key("doc", "a")], { run: r2, effect: e1 ?? effectKey() })
          const second = wait([key("doc", "a")], { run: r1, effect: e2 ?? effectKey() })
          const first = wait([key("doc", "a")], { run: r1, effect: e1 ?? effectKey() })
          for (const w of [last, second, first]) yield* store.subscribe(w, at(10))
          assert.deepStrictEqual(yield* store.waiting(10), [first, second, last])
        }),
      ))
  })

  describe("unsubscribe", () => {
    test("deletes every row of (run, effect) and no other wait", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const gone = wait([key("doc", "a"), key("doc", "b")], { run })
          const kept = wait([key("doc", "a")], { run })
          const other = wait([key("doc", "a")], { effect: gone.effect })
          yield* store.subscribe(gone, at(10))
          yield* store.subscribe(kept, at(11))
          yield* store.subscribe(other, at(12))
          yield* store.unsubscribe(run, gone.effect)
          assert.deepStrictEqual(yield* store.waiting(10), [kept, other])
          yield* store.unsubscribe(run, gone.effect)
          yield* store.unsubscribe(generateRunId(), effectKey())
          assert.deepStrictEqual(yield* store.waiting(10), [kept, other])
        }),
      ))

    test("strips the payload of every event the run claimed, keeping identity and claim", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const a = event("a", [key("doc", "a")], { payload: "a" })
          const b = event("b", [key("doc", "b")], { payload: "b" })
          const theirs = event("c", [key("doc", "c")], { payload: "c" })
          const loose = event("d", [key("doc", "d")], { payload: "d" })
          for (const e of [a, b, theirs, loose]) yield* buffered(e, 100)
          const first = wait([key("doc", "a")], { run })
          const second = wait([key("doc", "b")], { run })
          yield* store.claimFor(first, at(101))
          yield* store.claimFor(second, at(101))
          const their = wait([key("doc", "c")])
          yield* store.claimFor(their, at(101))
          // One of the run's waits is enough: the run has journaled what it claimed.
          yield* store.unsubscribe(run, first.effect)
          assert.isFalse(yield* store.buffer(a, at(102)))
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(103)), Option.none())
          assert.deepStrictEqual(
            yield* store.claimFor(first, at(103)),
            Option.some(new BufferedEvent({ event: stored(a, null), receivedAt: at(100) })),
          )
          assert.deepStrictEqual(
            yield* store.claimFor(second, at(103)),
            Option.some(new BufferedEvent({ event: stored(b, null), receivedAt: at(100) })),
          )
          // Another run's claim and an unclaimed event keep their content.
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(their, at(103)), (e) => e.event),
            Option.some(stored(theirs)),
          )
          yield* store.sweepUnclaimed(at(100), "late")
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.event),
            [stored(loose)],
          )
          yield* store.unsubscribe(run, first.effect)
          yield* store.erasePayload("mail", "zzz")
          assert.deepStrictEqual(yield* store.waiting(10), [])
        }),
      ))

    test("keeps the payload another registered wait of the run claimed until that wait unsubscribes", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const run = generateRunId()
          const a = event("a", [key("doc", "a")], { payload: "a" })
          const b = event("b", [key("doc", "b")], { payload: "b" })
          const c = event("c", [key("doc", "c")], { kind: "other", payload: "c" })
          for (const e of [a, b, c]) yield* buffered(e, 100)
          const first = wait([key("doc", "a")], { run })
          const second = wait([key("doc", "b")], { run })
          // Same key as `c`, another kind: it could never take `c`, so it does not keep it.
          const third = wait([key("doc", "c")], { run })
          // Another run waiting on `a`'s key keeps nothing of this run's.
          const stranger = wait([key("doc", "a")])
          for (const w of [first, second, third, stranger]) yield* store.subscribe(w, at(100))
          yield* store.claimFor(first, at(101))
          yield* store.claimFor(second, at(101))
          yield* store.claimFor(wait([key("doc", "c")], { run, kind: "other" }), at(101))
          // The first wait's delivery is journaled; the second's may not be yet.
          yield* store.unsubscribe(run, first.effect)
          const payloadOf = (e: typeof a) =>
            Effect.map(
              store.accepted(e.source, e.id),
              Option.map((found) => found.event.payload),
            )
          assert.deepStrictEqual(yield* payloadOf(a), Option.some(null))
          assert.deepStrictEqual(yield* payloadOf(b), Option.some(stored(b).payload))
          assert.deepStrictEqual(yield* payloadOf(c), Option.some(null))
          assert.deepStrictEqual(
            yield* store.claimFor(second, at(102)),
            Option.some(new BufferedEvent({ event: stored(b), receivedAt: at(100) })),
          )
          yield* store.unsubscribe(run, second.effect)
          assert.deepStrictEqual(yield* payloadOf(b), Option.some(null))
        }),
      ))
  })
}
