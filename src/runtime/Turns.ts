/**
 * Giving the event loop a turn while fibers keep it busy. Effect's default scheduler drains its
 * queue in microtasks and falls back to a timer only after 2,048 drains in a row; when the queue
 * empties in between (a run concludes, its caller's `runPromise` settles, the caller starts the
 * next) the count starts again. An application that awaits runs back to back on stores that
 * answer synchronously (memory, SQLite) therefore never leaves the microtask queue: no timer fires,
 * so no sweep ticks, no durable timer is woken, no lease is renewed and no timeout elapses until the
 * load stops (`test/runtime/TimerUnderLoad.test.ts`).
 *
 * `scheduler` drains in microtasks too, and keeps a heartbeat: an immediate queued with the first
 * drain after the last one ran, whose callback notes that the loop reached its check phase. When
 * the heartbeat has waited `BUDGET_MS`, the loop has been held that long, and the next drain waits
 * for an immediate of its own, after the heartbeat, timers and I/O. A loop that turns on its own
 * (sockets, timers) keeps the heartbeat fresh, and the drains stay microtasks.
 *
 * Decision: the runtime installs it for the fibers under its layer (`Runtime.layer`), the user's
 * own included. It changes when a drain runs, never what runs; one immediate per turn of the loop
 * at most is its cost.
 */
import { Scheduler } from "effect"

/** The longest the fibers may hold the event loop before a drain waits for a turn of it. */
export const BUDGET_MS = 10

let beat = performance.now()
let beating = false

const heartbeat = () => {
  beat = performance.now()
  beating = false
}

/** Effect's scheduling, with the event loop given a turn after `BUDGET_MS` of microtasks. */
export const scheduler: Scheduler.Scheduler = Scheduler.makeBatched((drain) => {
  if (!beating) {
    // The loop turned since the last drain was queued (the heartbeat ran): the hold starts now.
    beating = true
    beat = performance.now()
    setImmediate(heartbeat)
  }
  if (performance.now() - beat < BUDGET_MS) queueMicrotask(drain)
  else setImmediate(drain)
})
