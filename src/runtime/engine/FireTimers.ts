/**
 * §7.10 pass 5: fires up to `limit` due timers, each recorded as `{"fired_at": fireAt}` (the due
 * instant, not the sweep's). The batch's leases are taken in one statement (`acquireMany`)
 * instead of one transaction per wake-up; a run it does not grant (its owner is live, or a second
 * due timer of the same run) takes `wake`'s own acquire with its backoff. The wake-ups run side
 * by side, each under a permit taken here, so a full background holds the pass; a lease taken for
 * a timer still queued for its permit is renewed meanwhile (issue 16 C), and given back if the
 * pass ends before its wake-up starts. The pass returns once every timer is resumed or refused,
 * not when the runs stop.
 */
import { Deferred, Effect, Exit, FiberSet } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import type { Holding } from "../Wakeup.js"
import type { EngineState } from "./EngineState.js"
import { TIMER_SOURCE, wake, wakeHeld } from "./Wake.js"

export const fireTimers = (state: EngineState, now: number, limit: number) =>
  Effect.gen(function* () {
    const { journal, holdings, wakers } = state
    const due = yield* state.timers.claimDue(now as never, limit)
    const tenant = yield* Tenant
    const granted = new Map<RunId, Journal.Lease>()
    if (due.length > 0) {
      for (const l of yield* journal.acquireMany(
        due.map((t) => t.run),
        state.owner,
        state.ttl,
      ))
        granted.set(l.run, l)
    }
    // Granted leases whose wake-up has not started: each start takes its own out (a single
    // synchronous step, so it and the pass's give-back below never both act on one lease).
    const unstarted = new Map(granted)
    // Held (renewed) while their wake-ups queue for a permit; each start lets its own go.
    const queuedHolds: Array<Holding> = []
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        for (const h of queuedHolds) holdings.unhold(h)
        return Effect.forEach(unstarted.values(), (l) => Effect.ignore(journal.releaseLease(l.run, l.epoch)), {
          discard: true,
        })
      }),
    )
    const woken: Array<Deferred.Deferred<boolean>> = []
    for (const t of due) {
      const lease = granted.get(t.run)
      // One wake-up per granted lease; another due timer of the same run acquires for itself.
      granted.delete(t.run)
      const queued = lease === undefined ? undefined : holdings.hold(t.run, lease.epoch, tenant)
      if (queued !== undefined) queuedHolds.push(queued)
      // Fired once the answer is durable (§7.11), which the woken run's first commit makes it; a
      // run that stopped before that commit, or a wake-up that never resumed, failed.
      const resumed = yield* Deferred.make<boolean>()
      const settled = (durable: boolean) => {
        Deferred.unsafeDone(resumed, Exit.succeed(durable))
      }
      const one = Effect.gen(function* () {
        holdings.unhold(queued)
        const held = lease !== undefined && unstarted.delete(t.run)
        const answer = { fired_at: t.fireAt }
        const disarm = state.timers.disarm(t.run, t.effect)
        const w = yield* Effect.either(
          held
            ? wakeHeld(state, t.run, lease.epoch, t.effect, answer, TIMER_SOURCE, disarm, settled)
            : wake(state, t.run, t.effect, answer, TIMER_SOURCE, disarm, settled),
        )
        if (w._tag === "Right" && w.right._tag === "Resumed") yield* w.right.resume
      }).pipe(
        // No Tenant provided here: the fiber FiberSet.run forks inherits this pass's context.
        Effect.ensuring(Effect.zipRight(Deferred.succeed(resumed, false), wakers.release(1))),
      )
      // Taken and handed over as one step, so an interruption between them leaks no permit; the
      // run itself stays interruptible (its stops interrupt it).
      yield* Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(wakers.take(1)), FiberSet.run(state.background, Effect.interruptible(one))),
      )
      woken.push(resumed)
    }
    let fired = 0
    for (const r of woken) if (yield* Deferred.await(r)) fired += 1
    return { fired, failed: due.length - fired, saturated: due.length >= limit }
  }).pipe(Effect.scoped)
