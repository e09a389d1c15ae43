/**
 * The buffer: `buffer`, `erasePayload`, `sweepUnclaimed` and `deadLetters`. An event is observed
 * through the store only: claimed by a wait, or retired and read back as a dead letter.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { BufferedEvent, DeadLetter } from "../../../src/domain/Event.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { at, buffered, event, key, stored, type Tester, wait } from "./Fixtures.js"

export const buffer = (test: Tester) => {
  describe("buffer", () => {
    test("a new event is stored unclaimed and live, with its keys, and returns true", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "z"), key("doc", "a"), key("case", "9")], { payload: { n: [1, "x"] } })
          assert.isTrue(yield* store.buffer(e, at(100)))
          assert.deepStrictEqual(yield* store.deadLetters(10), [])
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 1)
          assert.deepStrictEqual(yield* store.deadLetters(10), [
            new DeadLetter({ event: stored(e), receivedAt: at(100), reason: "late" }),
          ])
        }),
      ))

    test("a known dedup key changes nothing, correlation rows included, and returns false", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const first = event("1", [key("doc", "a")], { payload: "first" })
          yield* buffered(first, 100)
          const replay = event("1", [key("doc", "b")], { payload: "second", kind: "other" })
          assert.isFalse(yield* store.buffer(replay, at(200)))
          assert.deepStrictEqual(
            yield* store.claimFor(wait([key("doc", "b")], { kind: "other" }), at(300)),
            Option.none(),
          )
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "b")]), at(300)), Option.none())
          assert.deepStrictEqual(
            yield* store.claimFor(wait([key("doc", "a")]), at(300)),
            Option.some(new BufferedEvent({ event: stored(first), receivedAt: at(100) })),
          )
        }),
      ))

    test("the same id from two sources is two events", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const mail = event("1", [key("doc", "a")], { source: "mail" })
          const web = event("1", [key("doc", "a")], { source: "web" })
          assert.isTrue(yield* store.buffer(mail, at(100)))
          assert.isTrue(yield* store.buffer(web, at(101)))
          assert.strictEqual(yield* store.sweepUnclaimed(at(200), "late"), 2)
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.event),
            [stored(web), stored(mail)],
          )
        }),
      ))

    test("a key offered twice is stored once", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a"), key("doc", "a")]), 100)
          const claimed = yield* store.claimFor(wait([key("doc", "a")]), at(101))
          assert.deepStrictEqual(
            Option.map(claimed, (b) => b.event.correlation),
            Option.some([key("doc", "a")]),
          )
        }),
      ))
  })

  describe("erasePayload", () => {
    test("the payload reads back as JSON null while dedup still refuses a replay", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "a"), key("doc", "b")], { payload: { secret: true } })
          yield* buffered(e, 100)
          assert.isTrue(yield* store.erasePayload("mail", "1"))
          assert.isFalse(yield* store.buffer(e, at(150)))
          assert.strictEqual(yield* store.sweepUnclaimed(at(200), "late"), 1)
          assert.deepStrictEqual(yield* store.deadLetters(10), [
            new DeadLetter({ event: stored(e, null), receivedAt: at(100), reason: "late" }),
          ])
          assert.isTrue(yield* store.erasePayload("mail", "1"))
        }),
      ))

    test("a claim survives erasure", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "a")])
          const mine = wait([key("doc", "a")])
          yield* buffered(e, 100)
          yield* store.claimFor(mine, at(101))
          assert.isTrue(yield* store.erasePayload("mail", "1"))
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(102)), Option.none())
          assert.deepStrictEqual(
            yield* store.claimFor(mine, at(103)),
            Option.some(new BufferedEvent({ event: stored(e, null), receivedAt: at(100) })),
          )
        }),
      ))

    test("false when no event with that dedup key was ever accepted", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a")], { source: "mail" }), 100)
          assert.isFalse(yield* store.erasePayload("web", "1"))
          assert.isFalse(yield* store.erasePayload("mail", "2"))
        }),
      ))
  })

  describe("sweepUnclaimed", () => {
    test("a zero grace window retires an event received in the same second", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a")]), 100)
          yield* buffered(event("2", [key("doc", "a")]), 101)
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 1)
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.event.id),
            ["1"],
          )
        }),
      ))

    test("claimed events are never retired, erased ones are", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("claimed", [key("doc", "a")]), 100)
          yield* buffered(event("erased", [key("doc", "b")]), 100)
          yield* store.claimFor(wait([key("doc", "a")]), at(101))
          yield* store.erasePayload("mail", "erased")
          assert.strictEqual(yield* store.sweepUnclaimed(at(500), "late"), 1)
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => [d.event.id, d.event.payload]),
            [["erased", null]],
          )
        }),
      ))

    test("a retired event is counted once and can no longer be claimed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          const e = event("1", [key("doc", "a")])
          yield* buffered(e, 100)
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 1)
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "again"), 0)
          assert.deepStrictEqual(yield* store.claimFor(wait([key("doc", "a")]), at(101)), Option.none())
          yield* store.subscribe(wait([key("doc", "a")]), at(101))
          assert.deepStrictEqual(yield* store.matchWaiter(e, at(102)), Option.none())
          assert.deepStrictEqual(
            (yield* store.deadLetters(10)).map((d) => d.reason),
            ["late"],
          )
        }),
      ))
  })

  describe("deadLetters", () => {
    test("newest first, ties by dedup key descending, at most limit", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("a", [key("doc", "1")]), 100)
          yield* buffered(event("c", [key("doc", "1")]), 300)
          yield* buffered(event("b", [key("doc", "1")]), 300)
          yield* buffered(event("d", [key("doc", "1")]), 200)
          yield* store.sweepUnclaimed(at(300), "late")
          const ids = (n: number) => Effect.map(store.deadLetters(n), (ds) => ds.map((d) => d.event.id))
          assert.deepStrictEqual(yield* ids(10), ["c", "b", "d", "a"])
          assert.deepStrictEqual(yield* ids(2), ["c", "b"])
          assert.deepStrictEqual(yield* ids(0), [])
        }),
      ))

    test("keys are read back from storage ordered by (namespace, value)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "z"), key("case", "b"), key("doc", "a"), key("case", "a")]), 100)
          yield* store.sweepUnclaimed(at(100), "late")
          assert.deepStrictEqual(
            (yield* store.deadLetters(1)).map((d) => d.event.correlation),
            [[key("case", "a"), key("case", "b"), key("doc", "a"), key("doc", "z")]],
          )
        }),
      ))

    test("an empty reason reads unclaimed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* EventStore
          yield* buffered(event("1", [key("doc", "a")]), 100)
          yield* store.sweepUnclaimed(at(100), "")
          assert.deepStrictEqual(
            (yield* store.deadLetters(1)).map((d) => d.reason),
            ["unclaimed"],
          )
        }),
      ))
  })
}
