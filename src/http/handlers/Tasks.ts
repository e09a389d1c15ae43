/**
 * The worklist routes (§8.2). Every verb names the caller as the actor with the caller's roles;
 * four-eyes refusals come from the store (`Excluded`, `WrongRole`) before anything is written.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../domain/CorrelationKey.js"
import { InboundEvent } from "../../domain/Event.js"
import { Decision, Task } from "../../domain/Task.js"
import type { TaskId } from "../../domain/TaskId.js"
import { TaskNotFound } from "../../errors/ClaimError.js"
import { Delivery } from "../../runtime/Delivery.js"
import { TaskStore } from "../../services/TaskStore.js"
import { Api } from "../Api.js"
import type { Caller } from "../Caller.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

/** Where decisions come from (§7.7). `POST /events` refuses this kind, so only `decide` sends it. */
export const WORKLIST_SOURCE = "agentplane://worklist"

/** The event kind a task's run waits on (§7.7). */
export const DECIDED_KIND = "agentplane.task.decided"

/** The decision event of `task` (§7.7 `answerTask`): one per task, so a repeat is a duplicate. */
export const decisionEvent = (task: TaskId, decision: Decision): InboundEvent =>
  new InboundEvent({
    source: WORKLIST_SOURCE,
    id: `task-decision:${task}`,
    kind: DECIDED_KIND,
    correlation: [CorrelationKey.make("task", task)],
    payload: {
      approved: decision.approved,
      actor: decision.actor,
      reason: decision.reason,
      amendment: decision.amendment,
    },
  })

export const layer = HttpApiBuilder.group(Api, "tasks", (handlers) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore
    const delivery = yield* Delivery
    const view = (caller: Caller) => (task: Task) => Wire.taskView(task, caller.actor, caller.roles)
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.list")
          const limit = Wire.limitOf(urlParams.limit)
          // One row past the limit tells whether the list was cut.
          const rows = yield* tasks.queue(caller.roles, limit + 1).pipe(Guard.asTenant(caller))
          return { items: rows.slice(0, limit).map(view(caller)), truncated: rows.length > limit }
        }),
      )
      .handle("read", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.read", path.task)
          const task = yield* tasks.task(path.task).pipe(Guard.asTenant(caller))
          return view(caller)(
            yield* Option.match(task, {
              onNone: () => Effect.fail(new TaskNotFound({ task: path.task })),
              onSome: Effect.succeed,
            }),
          )
        }),
      )
      .handle("claim", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.claim", path.task)
          const task = yield* tasks.claim(path.task, caller.actor, caller.roles).pipe(Guard.asTenant(caller))
          return view(caller)(task)
        }),
      )
      .handle("release", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.release", path.task)
          yield* tasks.release(path.task, caller.actor).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("takeover", ({ path, payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.takeover", path.task)
          const task = yield* tasks
            .takeOver(path.task, payload.from, caller.actor, caller.roles)
            .pipe(Guard.asTenant(caller))
          return view(caller)(task)
        }),
      )
      .handle("decide", ({ path, payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.decide", path.task)
          // §7.7 decideTask: claim (a ClaimError refuses before anything is written), answer,
          // then complete. Each step is idempotent for this caller, so a retry after an outage
          // finishes the job: the claim is the holder's, the answer a duplicate.
          return yield* Effect.gen(function* () {
            const claimed = yield* tasks.claim(path.task, caller.actor, caller.roles)
            const decision = new Decision({ ...payload, actor: caller.actor })
            const outcome = yield* delivery.deliver(decisionEvent(path.task, decision), yield* Guard.now)
            yield* tasks.setState(path.task, "completed")
            return {
              task: view(caller)(new Task({ ...claimed, state: "completed" })),
              delivery: Wire.deliveryAnswer(outcome),
            }
          }).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)
