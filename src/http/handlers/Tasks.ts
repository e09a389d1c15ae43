/**
 * The worklist routes (§8.2). Every verb names the caller as the actor with the caller's roles;
 * four-eyes refusals come from the store (`Excluded`, `WrongRole`) before anything is written.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import * as Canonical from "../../domain/Canonical.js"
import type { InboundEvent } from "../../domain/Event.js"
import { Decision, EXPIRY_ACTOR, Task, UNATTENDED_ACTOR } from "../../domain/Task.js"
import { NotPending, TaskNotFound } from "../../errors/ClaimError.js"
import { Delivered, Runtime } from "../../runtime/Runtime.js"
import { decisionEvent, WORKLIST_SOURCE } from "../../runtime/Worklist.js"
import { EventStore } from "../../services/EventStore.js"
import { TaskStore } from "../../services/TaskStore.js"
import { Api } from "../Api.js"
import type { Caller } from "../Caller.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "tasks", (handlers) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore
    const runtime = yield* Runtime
    const events = yield* EventStore
    const view = (caller: Caller) => (task: Task) => Wire.taskView(task, caller.actor, caller.roles)
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:task.list")
          const limit = Wire.limitOf(urlParams.limit)
          // One row past the limit tells whether the list was cut.
          const rows = yield* tasks.queue(caller.roles, limit + 1).pipe(Guard.asTenant(caller))
          return Wire.page(rows, limit, view(caller))
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
          const decision = new Decision({ ...payload, actor: caller.actor })
          const event = decisionEvent(path.task, decision)
          // The decision of record: a decide that repeats it is a retry and succeeds again (the
          // answer of a decide that completed may have been lost); any other is refused.
          const ofRecord = events.accepted(WORKLIST_SOURCE, event.id)
          const answer = (task: Task, outcome: Delivered) => ({
            task: view(caller)(task),
            delivery: Wire.deliveryAnswer(outcome),
          })
          // §7.7 decideTask: claim (a ClaimError refuses before anything is written), answer,
          // then complete.
          return yield* Effect.gen(function* () {
            const claimed = yield* Effect.either(tasks.claim(path.task, caller.actor, caller.roles))
            if (Either.isLeft(claimed)) {
              const refused = claimed.left
              // Decided and completed: only a repeat of the decision that completed it is answered.
              if (refused._tag !== "NotPending" || refused.state !== "completed") return yield* refused
              const stored = yield* ofRecord
              const task = yield* tasks.task(path.task)
              if (Option.isNone(stored) || !sameDecision(stored.value.event, event) || Option.isNone(task)) {
                return yield* refused
              }
              return answer(task.value, Delivered.Duplicate())
            }
            // `answerTask` delivers `decisionEvent(task, decision)`, the same event as `event`,
            // and resumes the run waiting on it in the background.
            const outcome = yield* runtime.answerTask(path.task, decision)
            // The dedup key is one per task, so a duplicate is the decision of record. Only the
            // holder gets here, but concurrent decides by the holder (a double click, a retrying
            // client racing its first attempt) each find the task claimed: the first answer
            // stands, and a loser that says otherwise was not the decision and must not read 200.
            if (outcome._tag === "Duplicate") {
              const stored = yield* ofRecord
              if (Option.isSome(stored) && !sameDecision(stored.value.event, event)) {
                return yield* new NotPending({ task: path.task, state: fateOf(stored.value.event) })
              }
            }
            yield* tasks.setState(path.task, "completed")
            return answer(new Task({ ...claimed.right, state: "completed" }), outcome)
          }).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)

// internal

/**
 * The stored decision event says what `event` says: same kind, same payload (approved, actor,
 * reason, amendment) compared canonically, so key order does not matter. An erased payload
 * (`null`, once the run journaled the decision) matches nothing: refused is the safe answer
 * when the decision of record can no longer be read.
 */
const sameDecision = (stored: InboundEvent, event: InboundEvent): boolean =>
  stored.kind === event.kind && Canonical.text(stored.payload) === Canonical.text(event.payload)

/** The state the decision of record brings its task to: the sweeper's decisions expire it (§7.10). */
const fateOf = (stored: InboundEvent): string => {
  const actor = (stored.payload as { readonly actor?: unknown } | null)?.actor
  return actor === EXPIRY_ACTOR || actor === UNATTENDED_ACTOR ? "expired" : "completed"
}
