/**
 * The worklist routes (§8.2). Every verb names the caller as the actor with the caller's roles;
 * four-eyes refusals come from the store (`Excluded`, `WrongRole`) before anything is written.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { Decision, type Task } from "../../domain/Task.js"
import { TaskNotFound } from "../../errors/ClaimError.js"
import { Runtime } from "../../runtime/Runtime.js"
import { TaskStore } from "../../services/TaskStore.js"
import { Api } from "../Api.js"
import type { Caller } from "../Caller.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "tasks", (handlers) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore
    const runtime = yield* Runtime
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
          // §7.7 decideTask lives in the runtime: claim, deliver, complete, and the refusals.
          const decided = yield* runtime.decideTask(path.task, decision, caller.roles).pipe(
            // The task vanished between the claim and its completion.
            Effect.catchTag("NotFound", () => Effect.fail(new TaskNotFound({ task: path.task }))),
            Guard.asTenant(caller),
          )
          return { task: view(caller)(decided.task), delivery: Wire.deliveryAnswer(decided.delivered) }
        }),
      )
  }),
)
