/**
 * The race TimerStore settles (G5): one wake-up, many sweepers, fired from many fibers through a
 * small pool. It proves something where statements interleave (`concurrentWriters`); elsewhere it
 * confirms serial correctness with the same assertions.
 */
import { describe } from "@effect/vitest"
import { Effect, FastCheck } from "effect"
import type { Timer } from "../../../src/domain/Timer.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import { assert } from "../../support/Assert.js"
import { type Backend, onPool } from "../../support/Backend.js"
import { fire, runs } from "../../support/Races.js"
import { arm, at, id, type Tester, timer } from "./Fixtures.js"

const shape = {
  fibers: FastCheck.integer({ min: 2, max: 24 }),
  pool: FastCheck.integer({ min: 2, max: 4 }),
  timers: FastCheck.integer({ min: 1, max: 30 }),
  limit: FastCheck.integer({ min: 1, max: 32 }),
}

/** One sweeper: claims at `now` in batches of `limit` until a call comes back empty. */
const sweep = (now: number, limit: number) =>
  Effect.gen(function* () {
    const store = yield* TimerStore
    const taken: Array<Timer> = []
    for (;;) {
      const batch = yield* store.claimDue(at(now), limit)
      if (batch.length === 0) return taken
      taken.push(...batch)
    }
  })

/** Every timer exactly once across the sweepers' results. */
const exactlyOnce = (results: ReadonlyArray<ReadonlyArray<Timer>>, timers: ReadonlyArray<Timer>) => {
  const claimed = results.flat().map(id)
  assert.strictEqual(claimed.length, new Set(claimed).size, "a timer was claimed twice")
  assert.deepStrictEqual([...claimed].sort(), timers.map(id).sort())
}

export const races = (test: Tester, backend: Backend) => {
  describe("races", () => {
    test.prop(
      "concurrent sweepers claim every due timer exactly once, and again once after the lease, beside fresh ones",
      shape,
      ({ fibers, pool, timers: m, limit }) =>
        Effect.gen(function* () {
          const timers = Array.from({ length: m }, (_, i) => timer(1_000 + (i % 7)))
          const later = timer(5_000)
          yield* arm(...timers, later)
          exactlyOnce(yield* fire(fibers, () => sweep(1_010, limit)), timers)
          exactlyOnce(yield* fire(fibers, () => sweep(1_069, limit)), [])
          // Lapsed claims and never-claimed timers due together: two picks, one set.
          const fresh = Array.from({ length: m }, (_, i) => timer(1_060 + (i % 5)))
          yield* arm(...fresh)
          exactlyOnce(yield* fire(fibers, () => sweep(1_070, limit)), [...timers, ...fresh])
        }).pipe(onPool(backend, pool)),
      runs,
    )
  })
}
