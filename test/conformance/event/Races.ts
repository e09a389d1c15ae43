/**
 * The races EventStore settles (G5), fired from many fibers through a small pool. They prove
 * something where statements interleave (`concurrentWriters`); elsewhere they confirm serial
 * correctness with the same assertions.
 */
import { randomUUID } from "node:crypto"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { BufferedEvent, TargetedDelivery } from "../../../src/domain/Event.js"
import { generateRunId } from "../../../src/domain/Ids.js"
import { EventStore } from "../../../src/services/EventStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, onPool } from "../../support/Backend.js"
import { fire, runs, shape } from "../../support/Races.js"
import { accept } from "./Accept.js"
import { asStored, at, buffered, event, key, stored, type Tester, wait } from "./Fixtures.js"

/**
 * Opens the pool's connections before the race: a cold pool connects one fiber at a time, and the
 * race then runs serially (a claim with no lock at all passed 91 runs that way, and failed warm).
 */
const warm = Effect.flatMap(EventStore, (store) => fire(8, () => store.waiting(1)))

const race = <A, E, R>(n: number, f: (i: number) => Effect.Effect<A, E, R>) => Effect.zipRight(warm, fire(n, f))

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test.prop(
      "one event and N waiting runs calling claimFor: exactly one run gets it",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const k = key("race", randomUUID())
          const e = event("1", [k])
          yield* buffered(e, 10)
          const subs = Array.from({ length: fibers }, () => wait([k]))
          const results = yield* race(fibers, (i) => store.claimFor(subs[i] ?? wait([k]), at(20)))
          const winners = results.flatMap((r, i) => (Option.isSome(r) ? [i] : []))
          assert.strictEqual(winners.length, 1)
          const winner = subs[winners[0] ?? -1] ?? wait([k])
          assert.deepStrictEqual(
            results[winners[0] ?? -1],
            Option.some(new BufferedEvent({ event: stored(e), receivedAt: at(10) })),
          )
          // The claim is durable: the winner gets it back, every loser still finds none.
          assert.strictEqual(Option.isSome(yield* store.claimFor(winner, at(30))), true)
          for (const [i, sub] of subs.entries()) {
            if (i !== winners[0]) assert.deepStrictEqual(yield* store.claimFor(sub, at(30)), Option.none())
          }
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N events racing matchWaiter for one two-key wait: exactly one matches, the rest stay unclaimed and live",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const [a, b] = [key("race", randomUUID()), key("race", randomUUID())]
          const w = wait([a, b])
          yield* store.subscribe(w, at(10))
          // Events alternate between the wait's two keys, so they lock its rows through different doors.
          const events = Array.from({ length: fibers }, (_, i) => event(`e${i}`, [i % 2 === 0 ? a : b]))
          for (const e of events) yield* buffered(e, 20)
          const results = yield* race(fibers, (i) => store.matchWaiter(events[i] ?? event("x", [a]), at(30)))
          const matched = results.filter(Option.isSome)
          assert.strictEqual(matched.length, 1)
          assert.deepStrictEqual(matched[0], Option.some(asStored(w)))
          assert.deepStrictEqual(yield* store.waiting(10), [asStored(w)])
          // Every loser is still free: the sweep can retire exactly them.
          assert.strictEqual(yield* store.sweepUnclaimed(at(30), "late"), fibers - 1)
          const dead = (yield* store.deadLetters(fibers)).map((d) => d.event.id).sort()
          const losers = events.filter((_, i) => Option.isNone(results[i] ?? Option.none())).map((e) => e.id)
          assert.deepStrictEqual(dead, losers.sort())
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N concurrent deliverTo of one event to one run: one write, every answer Matched with the same wait",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const k = key("race", randomUUID())
          const run = generateRunId()
          const w = wait([k], { run })
          yield* store.subscribe(w, at(10))
          const e = event("1", [k])
          const results = yield* race(fibers, (i) => store.deliverTo(run, e, at(20 + i)))
          // The first write claimed it for this run, so every later answer is a retry: Matched again.
          for (const r of results) assert.deepStrictEqual(r, TargetedDelivery.Matched({ subscription: w }))
          assert.isFalse(yield* store.buffer(e, at(100)))
          const held = yield* store.claimFor(w, at(100))
          assert.deepStrictEqual(
            Option.map(held, (h) => h.event),
            Option.some(stored(e)),
          )
          // One row, written once: its `receivedAt` is one of the deliveries' instants.
          const receivedAt = Option.map(held, (h) => h.receivedAt).pipe(Option.getOrElse(() => at(-1)))
          assert.strictEqual(receivedAt >= 20 && receivedAt < 20 + fibers, true)
          assert.deepStrictEqual(yield* store.waiting(10), [w])
          assert.strictEqual(yield* store.sweepUnclaimed(at(100), "late"), 0)
        }).pipe(onPool(backend, pool)),
      runs,
    )

    test.prop(
      "N concurrent deliverTo of one event to N waiting runs: one Matched, the rest Duplicate",
      shape,
      ({ fibers, pool }) =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const k = key("race", randomUUID())
          const subs = Array.from({ length: fibers }, () => wait([k]))
          for (const s of subs) yield* store.subscribe(s, at(10))
          const e = event("1", [k])
          const results = yield* race(fibers, (i) => store.deliverTo((subs[i] ?? wait([k])).run, e, at(20)))
          const winners = results.flatMap((r, i) => (r._tag === "Matched" ? [i] : []))
          assert.strictEqual(winners.length, 1)
          const winner = subs[winners[0] ?? -1] ?? wait([k])
          for (const [i, r] of results.entries()) {
            assert.deepStrictEqual(
              r,
              i === winners[0] ? TargetedDelivery.Matched({ subscription: winner }) : TargetedDelivery.Duplicate(),
            )
          }
          assert.strictEqual(Option.isSome(yield* store.claimFor(winner, at(30))), true)
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
  // `accept`'s contract and its races, which need the backend for their pools.
  accept(test, backend)
}
