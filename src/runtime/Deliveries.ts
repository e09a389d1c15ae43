/**
 * Deliveries (§7.7, §7.9): an event to whichever run waits for it, to one named run, the
 * redelivery of events already claimed for waiting runs, and a task's decision, which is an event
 * of its own. Each hands a matched run to the engine's wake-up (`Wake.wake`, then `inBackground`), so
 * the caller is answered once the run's resume is under way, not when it ends.
 */
import { Effect, Either, Option } from "effect"
import type { InboundEvent } from "../domain/Event.js"
import type { RunId } from "../domain/Ids.js"
import type { Decision } from "../domain/Task.js"
import * as TaskM from "../domain/Task.js"
import type * as TaskId from "../domain/TaskId.js"
import { NotPending } from "../errors/ClaimError.js"
import { PlanContract } from "../errors/RuntimeError.js"
import { type EngineState, nowSecs } from "./engine/EngineState.js"
import * as Wake from "./engine/Wake.js"
import { Delivered } from "./RunResult.js"
import type { Woke } from "./Wakeup.js"
import * as Worklist from "./Worklist.js"

type DropFirst<T extends ReadonlyArray<unknown>> = T extends readonly [unknown, ...infer R] ? R : never

/** The deliveries of one engine: each matched run is woken through the engine's own wake-up flow. */
export const make = (state: EngineState) => {
  const { journal, events, tasks } = state
  const wake = (...args: DropFirst<Parameters<typeof Wake.wake>>) => Wake.wake(state, ...args)
  const inBackground = (woke: Extract<Woke, { readonly _tag: "Resumed" }>) => Wake.inBackground(state, woke)
  const deliver = (event: InboundEvent) =>
    Effect.gen(function* () {
      const now = yield* nowSecs
      const accepted = yield* events.accept(event, now as never)
      switch (accepted._tag) {
        case "Duplicate":
          return Delivered.Duplicate()
        case "Buffered":
          return Delivered.Buffered()
        case "Matched": {
          const sub = accepted.subscription
          const woke = yield* wake(
            sub.run,
            sub.effect,
            event.payload,
            event.source,
            events.unsubscribe(sub.run, sub.effect),
          ).pipe(
            Effect.catchAll((e) =>
              // The event is claimed for the run, so a later claimFor or redelivery still finds it.
              Effect.as(Effect.logWarning("agentplane.delivery.resume_failed", e), { _tag: "Busy" } satisfies Woke),
            ),
          )
          if (woke._tag === "Resumed") {
            yield* inBackground(woke)
            return Delivered.Resumed({ run: sub.run })
          }
          // The run is sealed: its wait is released, and the event stays claimed for it.
          if (woke._tag === "NotWaiting") return Delivered.Buffered()
          // Its owner is live: put the wait back; the owner's claimFor finds the event, claimed for its run.
          yield* events.subscribe(sub, now as never)
          // The owner records its answer before it unsubscribes. If that unsubscribe came before
          // the line above, its answer is in the journal now, and the wait put back is stale; if
          // after, the owner's unsubscribe removes it. Either way no wait outlives its answer.
          const records = yield* journal.read(sub.run, 1)
          if (records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, sub.effect))) {
            yield* events.unsubscribe(sub.run, sub.effect)
          }
          return Delivered.Buffered()
        }
      }
    })

  /**
   * §7.9 deliverTo: delivers to one named run. A known (source, id) not claimed by the run is
   * `Duplicate`; a run awaiting no such event is a plan-contract error, and nothing is stored.
   * A match leaves the wait in place (the store never deletes it here), so a live owner's
   * claimFor finds the event claimed for its run and `Busy` needs nothing put back. The answer
   * is the payload as stored: a retry under the same (source, id) answers what was accepted.
   */
  const deliverTo = (run: RunId, event: InboundEvent) =>
    Effect.gen(function* () {
      const now = yield* nowSecs
      const targeted = yield* events.deliverTo(run, event, now as never)
      switch (targeted._tag) {
        case "Duplicate":
          return Delivered.Duplicate()
        case "NotWaiting":
          return yield* new PlanContract({
            detail: `run ${run} awaits no ${event.kind} on ${event.correlation.map((k) => `(${k.namespace}, ${k.value})`).join(", ") || "no key"}`,
          })
        case "Matched": {
          const sub = targeted.subscription
          const stored = yield* events.accepted(event.source, event.id)
          const payload = Option.match(stored, {
            onNone: () => event.payload,
            onSome: (b) => (b.event.payload === null ? event.payload : b.event.payload),
          })
          const woke = yield* wake(run, sub.effect, payload, event.source, events.unsubscribe(run, sub.effect)).pipe(
            Effect.catchAll((e) =>
              Effect.as(Effect.logWarning("agentplane.delivery.resume_failed", e), { _tag: "Busy" } satisfies Woke),
            ),
          )
          if (woke._tag === "Resumed") {
            yield* inBackground(woke)
            return Delivered.Resumed({ run })
          }
          return Delivered.Buffered()
        }
      }
    })

  /** §7.9 redelivery: each waiting run with an event already claimed for it is answered and resumed; returns how many. */
  const redeliverClaimed = (limit: number) =>
    Effect.gen(function* () {
      const now = yield* nowSecs
      let resumed = 0
      for (const sub of yield* events.waiting(limit)) {
        const hit = yield* events.claimFor(sub, now as never)
        if (Option.isNone(hit)) continue
        // A wait stays registered, elected by its event, until its answer is durable, so a
        // crash between the match and the wake-up loses nothing. Only a run suspended on it is
        // woken here: one whose answer is journaled has a stale wait, released now (what
        // unsubscribe needs is true); one past its wait otherwise is its live owner's, or,
        // once its lease lapses, the recovery pass's, which writes the evidence §7.10 asks for.
        const records = yield* journal.read(sub.run, 1)
        if (records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, sub.effect))) {
          yield* events.unsubscribe(sub.run, sub.effect)
          continue
        }
        if (records[records.length - 1]?.kind.kind !== "RunSuspended") continue
        const e = hit.value.event
        const woke = yield* Effect.either(
          wake(sub.run, sub.effect, e.payload, e.source, events.unsubscribe(sub.run, sub.effect)),
        )
        if (woke._tag === "Right" && woke.right._tag === "Resumed") {
          yield* inBackground(woke.right)
          resumed += 1
        }
      }
      return resumed
    })

  /** §7.7 answerTask: delivers the decision as the task's one decision event. */
  const answerTask = (task: TaskId.TaskId, decision: Decision) => deliver(Worklist.decisionEvent(task, decision))

  /**
   * §7.7 decideTask: claim (a ClaimError refuses before anything is written), deliver, complete.
   * The three writes cannot share one transaction (the task and the event buffer are separate
   * stores), so the order makes every gap heal instead: the decision is delivered before the
   * task is completed, and the event's dedup key (one per task) makes the first decision the
   * decision of record. A decide cut off after delivering leaves the task claimed with its
   * decision stored. A retry by the holder that repeats it is answered `Duplicate` and completes
   * the task; any other decide (a takeover's, or any once the run has journaled the decision
   * and its payload is erased, so it can no longer be matched) is refused `NotPending` and
   * completes the task the decision of record settled. The sweeper's expiry of such a task
   * finds the decision of record too and completes it instead of expiring it.
   */
  const decideTask = (task: TaskId.TaskId, decision: Decision, roles: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const event = Worklist.decisionEvent(task, decision)
      const ofRecord = events.accepted(Worklist.WORKLIST_SOURCE, event.id)
      const claimed = yield* Effect.either(tasks.claim(task, decision.actor, roles))
      if (Either.isLeft(claimed)) {
        const refused = claimed.left
        // Completed: only a repeat of the decision that completed it is answered (its first
        // answer may have been lost).
        if (refused._tag !== "NotPending" || refused.state !== "completed") return yield* refused
        const stored = yield* ofRecord
        const row = yield* tasks.task(task)
        if (Option.isNone(stored) || !Worklist.sameDecision(stored.value.event, event) || Option.isNone(row)) {
          return yield* refused
        }
        return { task: row.value, delivered: Delivered.Duplicate() }
      }
      const delivered = yield* answerTask(task, decision)
      if (delivered._tag === "Duplicate") {
        // Concurrent decides by the holder, or a holder after a takeover: the first stands, and
        // a decide that says otherwise was not the decision.
        const stored = yield* ofRecord
        if (Option.isSome(stored) && !Worklist.sameDecision(stored.value.event, event)) {
          const fate = Worklist.fateOf(stored.value.event)
          yield* tasks.setState(task, fate)
          return yield* new NotPending({ task, state: fate })
        }
      }
      yield* tasks.setState(task, "completed")
      return { task: new TaskM.Task({ ...claimed.right, state: "completed" }), delivered }
    })

  return { deliver, deliverTo, redeliverClaimed, answerTask, decideTask }
}
