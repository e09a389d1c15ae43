/**
 * `Turns.scheduler`: fibers awaited back to back, each settling before the next starts, leave
 * the event loop a turn within the budget, where Effect's default scheduler leaves it none.
 */
import { Effect, Scheduler } from "effect"
import { describe, it } from "vitest"
import * as Turns from "../../src/runtime/Turns.js"
import { assert } from "../support/Assert.js"

/** Runs one short fiber after another for at most `ms`; whether a 20 ms timer fired meanwhile, and how many ran. */
const backToBack = async (scheduler: Scheduler.Scheduler, ms: number) => {
  let fired = false
  const timer = setTimeout(() => {
    fired = true
  }, 20)
  const started = performance.now()
  let n = 0
  // Each fiber yields once, so it goes through the scheduler, as a run's forks and yields do.
  const one = Effect.withScheduler(
    Effect.zipRight(
      Effect.yieldNow(),
      Effect.sync(() => n++),
    ),
    scheduler,
  )
  while (!fired && performance.now() - started < ms) await Effect.runPromise(one)
  clearTimeout(timer)
  return { fired, n }
}

describe("Turns.scheduler", () => {
  it("lets a timer fire while fibers run back to back", async () => {
    const { fired, n } = await backToBack(Turns.scheduler, 3000)
    assert.isTrue(fired, `the timer never fired while ${n} fibers ran`)
  })

  it("is needed: under the default scheduler the same loop starves the timer", async () => {
    const { fired, n } = await backToBack(Scheduler.defaultScheduler, 500)
    assert.isFalse(
      fired,
      `the default scheduler gave the loop a turn after ${n} fibers: this test no longer shows why Turns exists`,
    )
    assert.isTrue(n > 0)
  })
})
