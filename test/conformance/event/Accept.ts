/**
 * `accept`: buffer and match as one verb, so delivery cannot be left half done (§7.9).
 */
import { randomUUID } from "node:crypto"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { BufferedEvent } from "../../../src/domain/Event.js"
import { Acceptance, EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend, onPool } from "../../support/Backend.js"
import { fire, runs, shape } from "../../support/Races.js"
import { elections } from "./Elections.js"
import { asStored, at, event, key, stored, type Tester, wait } from "./Fixtures.js"

export const accept = (test: Tester, backend: Backend) => {
  // What an acceptance leaves behind: the wait it elected.
  elections(test)
  describe("accept", () => {
    test("with no wait the event is buffered, unclaimed, for a later wait to claim", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "b"), key("doc", "a")])
          assert.deepStrictEqual(yield* store.accept(e, at(10)), Acceptance.Buffered())
          assert.deepStrictEqual(
            yield* store.claimFor(wait([key("doc", "a")]), at(20)),
            Option.some(new BufferedEvent({ event: stored(e), receivedAt: at(10) })),
          )
        }),
      ))

    test("a waiting wait takes the event: claimed for its run, the wait elected (still listed) and answered as registered", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const later = wait([key("doc", "a")])
          const first = wait([key("doc", "z"), key("doc", "a")])
          yield* store.subscribe(later, at(20))
          yield* store.subscribe(first, at(10))
          const e = event("1", [key("doc", "a")])
          assert.deepStrictEqual(yield* store.accept(e, at(30)), Acceptance.Matched({ subscription: asStored(first) }))
          // Elected, not deleted: it stays listed until the engine unsubscribes it (issue 16).
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(first), asStored(later)])
          // Claimed for `first`'s run: its own wait gets it back, `later` does not.
          assert.deepStrictEqual(yield* store.claimFor(later, at(40)), Option.none())
          assert.deepStrictEqual(
            Option.map(yield* store.claimFor(first, at(40)), (b) => b.event),
            Option.some(stored(e)),
          )
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 0)
        }),
      ))

    test("keys are walked in the event's order, and only waits of its kind match", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const onB = wait([key("doc", "b")])
          const onA = wait([key("doc", "a")])
          const ack = wait([key("doc", "b")], { kind: "ack" })
          yield* store.subscribe(ack, at(5))
          yield* store.subscribe(onA, at(10))
          yield* store.subscribe(onB, at(20))
          const answer = yield* store.accept(event("1", [key("doc", "b"), key("doc", "a")]), at(30))
          assert.deepStrictEqual(answer, Acceptance.Matched({ subscription: asStored(onB) }))
        }),
      ))

    test("a known dedup key is Duplicate with the message of record, and nothing is written", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const first = event("1", [key("doc", "a")], { payload: { n: 1 } })
          assert.deepStrictEqual(yield* store.accept(first, at(10)), Acceptance.Buffered())
          const w = wait([key("doc", "a")], { kind: "other" })
          yield* store.subscribe(w, at(15))
          const twin = event("1", [key("doc", "a")], { kind: "other", payload: { n: 2 } })
          assert.deepStrictEqual(
            yield* store.accept(twin, at(20)),
            Acceptance.Duplicate({ stored: new BufferedEvent({ event: stored(first), receivedAt: at(10) }) }),
          )
          // The twin's kind has a wait, but the twin was never accepted: the wait still waits.
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(w)])
          assert.isFalse(yield* store.buffer(twin, at(30)))
        }),
      ))

    test("an event taken by accept is not offered again by matchWaiter", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const [w1, w2] = [wait([key("doc", "a")]), wait([key("doc", "a")])]
          yield* store.subscribe(w1, at(10))
          yield* store.subscribe(w2, at(20))
          const e = event("1", [key("doc", "a")])
          assert.strictEqual((yield* store.accept(e, at(30)))._tag, "Matched")
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(40)), Option.none())
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(w1), asStored(w2)])
          // w2 is still free: the next event goes to it, not to the elected w1.
          assert.deepStrictEqual(
            yield* store.accept(event("2", [key("doc", "a")]), at(50)),
            Acceptance.Matched({ subscription: asStored(w2) }),
          )
        }),
      ))

    test("accepted reads the message of record, keys in stored order; none for an unknown key or source", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "b"), key("doc", "a")], { payload: { n: 1 } })
          assert.deepStrictEqual(yield* store.accepted("mail", "1"), Option.none())
          yield* store.accept(e, at(10))
          yield* store.accept(event("1", [key("doc", "c")], { payload: { n: 2 } }), at(20))
          const record = new BufferedEvent({ event: stored(e), receivedAt: at(10) })
          assert.deepStrictEqual(yield* store.accepted("mail", "1"), Option.some(record))
          assert.deepStrictEqual(yield* store.accepted("web", "1"), Option.none())
          assert.deepStrictEqual(yield* store.accepted("mail", "2"), Option.none())
          // Erased content reads as null; the identity stays.
          yield* store.erasePayload("mail", "1")
          assert.deepStrictEqual(
            yield* store.accepted("mail", "1"),
            Option.some(new BufferedEvent({ event: stored(e, null), receivedAt: at(10) })),
          )
        }),
      ))

    test.prop(
      "N copies of one event racing accept with N waits: one is accepted, the rest are Duplicate, one wait elected",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const k = key("race", randomUUID())
          const subs = Array.from({ length: fibers }, () => wait([k]))
          for (const [i, s] of subs.entries()) yield* store.subscribe(s, at(10 + i))
          const e = event("1", [k])
          yield* fire(8, () => store.waiting(1))
          const results = yield* fire(fibers, () => store.accept(e, at(100)))
          const matched = results.filter((r) => r._tag === "Matched")
          assert.deepStrictEqual(matched, [Acceptance.Matched({ subscription: subs[0] ?? wait([k]) })])
          for (const r of results) {
            if (r._tag !== "Matched") {
              assert.deepStrictEqual(
                r,
                Acceptance.Duplicate({ stored: new BufferedEvent({ event: stored(e), receivedAt: at(100) }) }),
              )
            }
          }
          // Every wait is still listed (the elected one until its unsubscribe), and exactly the
          // first is elected: a second event goes to the second wait.
          assert.deepStrictEqual(yield* store.waiting(fibers), subs)
          assert.deepStrictEqual(
            yield* store.accept(event("2", [k]), at(101)),
            fibers > 1 ? Acceptance.Matched({ subscription: subs[1] ?? wait([k]) }) : Acceptance.Buffered(),
          )
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N events racing accept for one two-key wait: exactly one is matched, the rest buffered and live",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const [a, b] = [key("race", randomUUID()), key("race", randomUUID())]
          const w = wait([a, b])
          yield* store.subscribe(w, at(10))
          const events = Array.from({ length: fibers }, (_, i) => event(`e${i}`, [i % 2 === 0 ? a : b]))
          yield* fire(8, () => store.waiting(1))
          const results = yield* fire(fibers, (i) => store.accept(events[i] ?? event("x", [a]), at(30)))
          assert.deepStrictEqual(
            results.filter((r) => r._tag === "Matched"),
            [Acceptance.Matched({ subscription: asStored(w) })],
          )
          assert.strictEqual(results.filter((r) => r._tag === "Buffered").length, fibers - 1)
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(w)])
          assert.strictEqual(yield* store.sweepUnclaimed(at(30), "late"), fibers - 1)
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
