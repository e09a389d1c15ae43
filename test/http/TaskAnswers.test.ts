/**
 * What the worklist routes answer about a task, on each backend: error bodies name the task
 * `task_<hex>` as every view does, `mayDecide` is false where a decide would be refused, and a
 * decision needs a reason with something in it.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TaskId } from "../../src/domain/TaskId.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task as taskRecord } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const open = (f: Http.Fixture, shape: Parameters<typeof taskRecord>[0] = {}) =>
  f.inTenant(Effect.flatMap(TaskStore, (store) => store.open(taskRecord(shape))))

for (const backend of Http.backends()) {
  describe(`http task answers (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("error bodies name the task task_<hex>, as its views and paths do", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const missing = "0".repeat(64)
            const notFound = yield* f.raw("GET", `/tasks/${missing}`, { as: "rita" })
            assert.deepStrictEqual(
              [notFound.status, notFound.json],
              [404, { _tag: "TaskNotFound", task: `task_${missing}` }],
            )
            const done = yield* open(f, { state: "completed" })
            const pending = yield* f.raw("POST", `/tasks/task_${done.id}/claim`, { as: "rita" })
            assert.deepStrictEqual(
              [pending.status, pending.json],
              [409, { _tag: "NotPending", task: `task_${done.id}`, state: "completed" }],
            )
            const held = yield* open(f, { state: "claimed", assignee: "sam" })
            const claimed = yield* f.raw("POST", `/tasks/task_${held.id}/claim`, { as: "rita" })
            assert.deepStrictEqual(
              [claimed.status, claimed.json],
              [409, { _tag: "AlreadyClaimed", task: `task_${held.id}`, holder: "sam" }],
            )
            const release = yield* f.raw("POST", `/tasks/task_${held.id}/release`, { as: "rita" })
            assert.deepStrictEqual(
              [release.status, release.json],
              [409, { _tag: "NotHeld", task: `task_${held.id}`, actor: "rita" }],
            )
          }),
        ),
      )

      it.effect("mayDecide is false for a decided, expired or another's task, true for one the caller may decide", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const tasks = {
              open: yield* open(f),
              mine: yield* open(f, { state: "claimed", assignee: "rita" }),
              escalated: yield* open(f, { state: "escalated" }),
              others: yield* open(f, { state: "claimed", assignee: "sam" }),
              completed: yield* open(f, { state: "completed" }),
              expired: yield* open(f, { state: "expired" }),
            }
            const seen: Record<string, boolean> = {}
            for (const [name, t] of Object.entries(tasks)) {
              seen[name] = (yield* f.as("rita").tasks.read({ path: { task: t.id } })).mayDecide
            }
            assert.deepStrictEqual(seen, {
              open: true,
              mine: true,
              escalated: true,
              others: false,
              completed: false,
              expired: false,
            })
            // The task decided through the API reads false afterwards, for its decider too.
            const decided = yield* f.as("rita").tasks.decide({
              path: { task: tasks.open.id },
              payload: { approved: true, reason: "matches the invoice", amendment: null },
            })
            assert.isFalse(decided.task.mayDecide)
            assert.isFalse((yield* f.as("rita").tasks.read({ path: { task: tasks.open.id } })).mayDecide)
          }),
        ),
      )

      it.effect("decide refuses an empty or blank reason (422 naming reason), as halt and takeover do", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            for (const reason of ["", "   ", "\n\t"]) {
              const answer = yield* f.raw("POST", `/tasks/task_${t.id}/decide`, {
                as: "rita",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ approved: true, reason }),
              })
              assert.strictEqual(answer.status, 422, JSON.stringify(reason))
              const body = answer.json as { _tag: string; message: string }
              assert.strictEqual(body._tag, "InvalidRequest")
              assert.match(body.message, /reason: must not be empty or blank/)
            }
            const halt = yield* f.raw("PUT", "/admin/halt", {
              as: "ada",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ reason: "" }),
            })
            assert.strictEqual(halt.status, 422)
            const untouched = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(TaskId.make(t.id))))
            assert.deepStrictEqual(
              Option.map(untouched, (u) => [u.state, Option.isNone(u.assignee)]),
              Option.some(["open", true]),
            )
          }),
        ),
      )
    })
  })
}
