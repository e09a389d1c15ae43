/**
 * The TimerStore contract, one `describe` per method (§5.3).
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { arm, claimDue, effectKey, inFireOrder, pending, pendingCount, type Tester, timer } from "./Fixtures.js"

export const verbs = (test: Tester) => {
  describe("arm", () => {
    test("an armed timer reads back with every field", () =>
      Effect.gen(function* () {
        const t = timer(100, { case: generateCaseId(), step: 7, phase: "compensating" })
        const bare = timer(100)
        yield* arm(t, bare)
        assert.deepStrictEqual(yield* pending(), inFireOrder([t, bare]))
        assert.deepStrictEqual(yield* claimDue(100), inFireOrder([t, bare]))
      }).pipe(asFreshTenant))

    test("re-arming is a no-op: the first registration and its fireAt stay", () =>
      Effect.gen(function* () {
        const first = timer(100, { step: 1 })
        yield* arm(first, timer(50, { run: first.run, effect: first.effect, step: 2, case: generateCaseId() }))
        assert.deepStrictEqual(yield* pending(), [first])
        assert.strictEqual(yield* pendingCount, 1)
        assert.deepStrictEqual(yield* claimDue(99), [])
        assert.deepStrictEqual(yield* claimDue(100), [first])
      }).pipe(asFreshTenant))

    test("re-arming a claimed timer neither moves it nor frees the claim", () =>
      Effect.gen(function* () {
        const t = timer(100)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(100), [t])
        yield* arm(timer(10, { run: t.run, effect: t.effect }))
        assert.deepStrictEqual(yield* claimDue(159), [])
        assert.deepStrictEqual(yield* pending(), [t])
      }).pipe(asFreshTenant))

    test("two effects of one run are two timers", () =>
      Effect.gen(function* () {
        const run = generateRunId()
        const a = timer(100, { run })
        const b = timer(100, { run })
        yield* arm(a, b)
        assert.strictEqual(yield* pendingCount, 2)
        assert.deepStrictEqual(yield* pending(), inFireOrder([a, b]))
      }).pipe(asFreshTenant))
  })

  describe("claimDue", () => {
    test("a timer is claimable from fireAt on, inclusive", () =>
      Effect.gen(function* () {
        const t = timer(100)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(99), [])
        assert.deepStrictEqual(yield* claimDue(100), [t])
      }).pipe(asFreshTenant))

    test("a repeat at the same now gets none", () =>
      Effect.gen(function* () {
        yield* arm(timer(10), timer(20))
        assert.strictEqual((yield* claimDue(30)).length, 2)
        assert.deepStrictEqual(yield* claimDue(30), [])
      }).pipe(asFreshTenant))

    test("a claim lasts 60 s: held at t + 59, claimable again at t + 60", () =>
      Effect.gen(function* () {
        const t = timer(100)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(130), [t])
        assert.deepStrictEqual(yield* claimDue(189), [])
        assert.deepStrictEqual(yield* claimDue(190), [t])
        // The lease runs from the newest claim.
        assert.deepStrictEqual(yield* claimDue(249), [])
        assert.deepStrictEqual(yield* claimDue(250), [t])
      }).pipe(asFreshTenant))

    test("a caller with an earlier clock does not take a held claim", () =>
      Effect.gen(function* () {
        const t = timer(100)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(300), [t])
        assert.deepStrictEqual(yield* claimDue(200), [])
        assert.deepStrictEqual(yield* claimDue(359), [])
      }).pipe(asFreshTenant))

    test("earliest fireAt first, ties by run then effect, at most limit", () =>
      Effect.gen(function* () {
        const run = generateRunId()
        const timers = [timer(30), timer(10, { run }), timer(20), timer(10, { run }), timer(10), timer(40)]
        const later = timer(1_000)
        yield* arm(...timers, later)
        const ordered = inFireOrder(timers)
        assert.deepStrictEqual(yield* claimDue(100, 4), ordered.slice(0, 4))
        assert.deepStrictEqual(yield* claimDue(100, 10), ordered.slice(4))
        assert.deepStrictEqual(yield* claimDue(100, 10), [])
      }).pipe(asFreshTenant))

    test("a lapsed claim keeps its fireAt place ahead of later fresh timers", () =>
      Effect.gen(function* () {
        const early = timer(10)
        yield* arm(early)
        assert.deepStrictEqual(yield* claimDue(10), [early])
        const fresh = timer(50)
        yield* arm(fresh)
        // At 70 both qualify: `early` lapsed exactly now, `fresh` has been due since 50.
        assert.deepStrictEqual(yield* claimDue(70, 1), [early])
        assert.deepStrictEqual(yield* claimDue(70, 1), [fresh])
      }).pipe(asFreshTenant))

    test("lapsed and fresh timers interleave in fire order within one limit; held ones are passed over", () =>
      Effect.gen(function* () {
        const held = timer(5)
        const lapsedA = timer(10)
        const lapsedB = timer(30)
        yield* arm(lapsedA, lapsedB)
        assert.deepStrictEqual(yield* claimDue(30), [lapsedA, lapsedB])
        yield* arm(held)
        assert.deepStrictEqual(yield* claimDue(60), [held])
        const freshA = timer(20)
        const freshB = timer(40)
        const freshC = timer(50)
        yield* arm(freshA, freshB, freshC)
        // At 90: the first claims lapsed (held since 30), `held` is held until 120, and the
        // fresh ones are due. The earliest three of both kinds, in fire order.
        assert.deepStrictEqual(yield* claimDue(90, 3), [lapsedA, freshA, lapsedB])
        assert.deepStrictEqual(yield* claimDue(90, 3), [freshB, freshC])
        assert.deepStrictEqual(yield* claimDue(90, 3), [])
      }).pipe(asFreshTenant))

    test("a limit of 0 (or less) claims nothing and leaves the timers claimable", () =>
      Effect.gen(function* () {
        const t = timer(10)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(100, 0), [])
        assert.deepStrictEqual(yield* claimDue(100, -3), [])
        assert.deepStrictEqual(yield* claimDue(100, 1), [t])
      }).pipe(asFreshTenant))

    test("a claimed timer stays armed, listed and counted until disarmed", () =>
      Effect.gen(function* () {
        const store = yield* TimerStore
        const t = timer(10)
        const waiting = timer(500)
        yield* arm(t, waiting)
        assert.deepStrictEqual(yield* claimDue(100), [t])
        assert.strictEqual(yield* pendingCount, 2)
        assert.deepStrictEqual(yield* pending(), [t, waiting])
        yield* store.disarm(t.run, t.effect)
        assert.strictEqual(yield* pendingCount, 1)
        assert.deepStrictEqual(yield* pending(), [waiting])
        assert.deepStrictEqual(yield* claimDue(1_000), [waiting])
      }).pipe(asFreshTenant))
  })

  describe("disarm", () => {
    test("removes the timer; a repeat, or a never-armed timer, is a no-op", () =>
      Effect.gen(function* () {
        const store = yield* TimerStore
        const t = timer(10)
        yield* arm(t)
        yield* store.disarm(t.run, t.effect)
        yield* store.disarm(t.run, t.effect)
        yield* store.disarm(generateRunId(), effectKey())
        assert.strictEqual(yield* pendingCount, 0)
        assert.deepStrictEqual(yield* claimDue(100), [])
      }).pipe(asFreshTenant))

    test("touches only its (run, effect)", () =>
      Effect.gen(function* () {
        const store = yield* TimerStore
        const run = generateRunId()
        const a = timer(10, { run })
        const b = timer(20, { run })
        const c = timer(30, { effect: a.effect })
        yield* arm(a, b, c)
        yield* store.disarm(a.run, a.effect)
        assert.deepStrictEqual(yield* pending(), [b, c])
      }).pipe(asFreshTenant))

    test("after a disarm, arming again registers the new fireAt", () =>
      Effect.gen(function* () {
        const store = yield* TimerStore
        const t = timer(10)
        yield* arm(t)
        assert.deepStrictEqual(yield* claimDue(10), [t])
        yield* store.disarm(t.run, t.effect)
        const again = timer(500, { run: t.run, effect: t.effect })
        yield* arm(again)
        assert.deepStrictEqual(yield* claimDue(499), [])
        assert.deepStrictEqual(yield* claimDue(500), [again])
      }).pipe(asFreshTenant))
  })

  describe("pendingCount", () => {
    test("counts every armed timer, due or not, claimed or not", () =>
      Effect.gen(function* () {
        assert.strictEqual(yield* pendingCount, 0)
        yield* arm(timer(10), timer(20), timer(5_000))
        yield* claimDue(15)
        assert.strictEqual(yield* pendingCount, 3)
      }).pipe(asFreshTenant))
  })

  describe("pending", () => {
    test("every timer, due or not, claimed or not, in fire order, at most limit", () =>
      Effect.gen(function* () {
        const run = generateRunId()
        const timers = [timer(5_000), timer(10, { run }), timer(20), timer(10, { run }), timer(10)]
        yield* arm(...timers)
        yield* claimDue(15, 1)
        const ordered = inFireOrder(timers)
        assert.deepStrictEqual(yield* pending(), ordered)
        assert.deepStrictEqual(yield* pending(3), ordered.slice(0, 3))
      }).pipe(asFreshTenant))

    test("a limit of 0 lists nothing", () =>
      Effect.gen(function* () {
        yield* arm(timer(10))
        assert.deepStrictEqual(yield* pending(0), [])
        assert.strictEqual((yield* pending(1)).length, 1)
      }).pipe(asFreshTenant))
  })
}
