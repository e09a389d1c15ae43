/**
 * The worklist routes through the derived client, on each backend: list, read, claim, release,
 * take-over and decide, with four-eyes refusals and their statuses.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Decision } from "../../src/domain/Task.js"
import { TaskId } from "../../src/domain/TaskId.js"
import * as Time from "../../src/domain/Time.js"
import { AlreadyClaimed, Excluded, NotHeld, NotPending, TaskNotFound, WrongRole } from "../../src/errors/ClaimError.js"
import type { Forbidden } from "../../src/http/Authorizer.js"
import * as Tasks from "../../src/runtime/Worklist.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task as taskRecord } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import { assertError } from "../support/Errors.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

const open = (fixture: Http.Fixture, shape: Parameters<typeof taskRecord>[0] = {}) =>
  fixture.inTenant(Effect.flatMap(TaskStore, (store) => store.open(taskRecord(shape))))

const stored = (fixture: Http.Fixture, id: TaskId) =>
  fixture.inTenant(Effect.flatMap(TaskStore, (store) => store.task(id))).pipe(Effect.map(Option.getOrThrow))

for (const backend of Http.backends()) {
  describe(`http tasks (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("GET /tasks lists the caller's eligible tasks with mayDecide, truncated past the limit", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const mine = yield* open(f, { candidateRoles: ["finance"], priority: "urgent" })
            const excluded = yield* open(f, { excludedActors: ["rita"], priority: "high" })
            yield* open(f, { candidateRoles: ["legal"] })
            const page = yield* f.as("rita").tasks.list({ urlParams: { limit: 5 } })
            assert.deepStrictEqual(
              page.items.map((t) => [t.id, t.mayDecide]),
              [
                [mine.id, true],
                [excluded.id, false],
              ],
            )
            assert.isFalse(page.truncated)
            const cut = yield* f.as("rita").tasks.list({ urlParams: { limit: 1 } })
            assert.deepStrictEqual(
              cut.items.map((t) => t.id),
              [mine.id],
            )
            assert.isTrue(cut.truncated)
          }),
        ),
      )

      it.effect("GET /tasks/{task} shows the task in wire form; an unknown one is TaskNotFound (404)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f, { candidateRoles: ["ops"], dueAt: 1_700_000_000 })
            const seen = yield* f.as("rita").tasks.read({ path: { task: t.id } })
            assert.strictEqual(seen.id, t.id)
            assert.deepStrictEqual(seen.dueAt, t.dueAt)
            assert.deepStrictEqual(seen.justification.confidence, Option.some(0.75))
            assert.isFalse(seen.mayDecide)
            const raw = yield* f.raw("GET", `/tasks/task_${t.id}`, { as: "rita" })
            const body = raw.json as Record<string, unknown>
            assert.strictEqual(body.id, `task_${t.id}`)
            assert.strictEqual(body.dueAt, "2023-11-14T22:13:20Z")
            assert.strictEqual(body.case, null)
            const missing = TaskId.make("0".repeat(64))
            assertError(
              yield* Effect.flip(f.as("rita").tasks.read({ path: { task: missing } })),
              new TaskNotFound({ task: missing }),
            )
          }),
        ),
      )

      it.effect("claim, release and take-over act as the caller", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const claimed = yield* f.as("rita").tasks.claim({ path: { task: t.id } })
            assert.deepStrictEqual([claimed.state, claimed.assignee], ["claimed", Option.some("rita")])
            assertError(
              yield* Effect.flip(f.as("sam").tasks.claim({ path: { task: t.id } })),
              new AlreadyClaimed({ task: t.id, holder: "rita" }),
            )
            assertError(
              yield* Effect.flip(f.as("sam").tasks.release({ path: { task: t.id } })),
              new NotHeld({ task: t.id, actor: "sam" }),
            )
            const taken = yield* f.as("sam").tasks.takeover({ path: { task: t.id }, payload: { from: "rita" } })
            assert.deepStrictEqual(taken.assignee, Option.some("sam"))
            assertError(
              yield* Effect.flip(f.as("rita").tasks.takeover({ path: { task: t.id }, payload: { from: "rita" } })),
              new NotHeld({ task: t.id, actor: "rita" }),
            )
            yield* f.as("sam").tasks.release({ path: { task: t.id } })
            const after = yield* stored(f, t.id)
            assert.deepStrictEqual([after.state, after.assignee], ["open", Option.none()])
          }),
        ),
      )

      it.effect("an excluded actor can neither claim nor decide (403), and nothing changes", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f, { excludedActors: ["rita"] })
            assertError(
              yield* Effect.flip(f.as("rita").tasks.claim({ path: { task: t.id } })),
              new Excluded({ actor: "rita" }),
            )
            const decided = yield* f.raw("POST", `/tasks/${t.id}/decide`, {
              as: "rita",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ approved: true, reason: "fine" }),
            })
            assert.strictEqual(decided.status, 403)
            assert.deepStrictEqual(decided.json, { _tag: "Excluded", actor: "rita" })
            assert.deepStrictEqual(yield* stored(f, t.id), t)
            const letters = yield* f.inTenant(Effect.flatMap(EventStore, (s) => s.deadLetters(10)))
            assert.strictEqual(letters.length, 0)
          }),
        ),
      )

      it.effect("a caller without a candidate role is WrongRole (403); a decided task is NotPending (409)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f, { candidateRoles: ["finance"] })
            assertError(
              yield* Effect.flip(f.as("sam").tasks.claim({ path: { task: t.id } })),
              new WrongRole({ actor: "sam" }),
            )
            const done = yield* open(f, { state: "completed" })
            assertError(
              yield* Effect.flip(f.as("rita").tasks.claim({ path: { task: done.id } })),
              new NotPending({ task: done.id, state: "completed" }),
            )
          }),
        ),
      )

      it.effect("a role the policy does not allow is Forbidden (403)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const refused = yield* Effect.flip(f.as("nobody").tasks.claim({ path: { task: t.id } }))
            assert.strictEqual((refused as Forbidden)._tag, "Forbidden")
            assert.strictEqual((refused as Forbidden).action, "api:task.claim")
            assert.deepStrictEqual(yield* stored(f, t.id), t)
          }),
        ),
      )

      it.effect("decide answers the waiting run with the caller as actor, completes the task and resumes the run", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.asksReviewer, `INV-${Math.random()}`),
              )
              assert.strictEqual(started.status._tag, "Suspended")
              const kase = Option.getOrThrow(started.case)
              const [t] = yield* f.inTenant(Effect.flatMap(TaskStore, (store) => store.forCase(kase)))
              if (t === undefined) return yield* Effect.dieMessage("the run opened no task")
              yield* f.as("rita").tasks.claim({ path: { task: t.id } })
              const answer = yield* f.as("rita").tasks.decide({
                path: { task: t.id },
                payload: { approved: true, reason: "looks right", amendment: { amount: 30 } },
              })
              assert.deepStrictEqual(answer.delivery, { result: "resumed", run: started.run })
              assert.deepStrictEqual([answer.task.state, answer.task.assignee], ["completed", Option.some("rita")])
              assert.strictEqual((yield* stored(f, t.id)).state, "completed")
              yield* f.runtime.idle
              const records = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.read(started.run, 1)))
              const last = records[records.length - 1]
              assert.deepStrictEqual(last?.kind.kind === "RunSealed" ? last.kind.outcome : last?.kind.kind, "succeeded")
              const answered = records
                .map((r) => (r.kind.kind === "EffectDone" ? r.kind.output : null))
                .find((o) => typeof o === "object" && o !== null && "actor" in o)
              assert.deepStrictEqual(answered, {
                approved: true,
                actor: "rita",
                reason: "looks right",
                amendment: { amount: 30 },
              })
              assertError(
                yield* Effect.flip(
                  f.as("rita").tasks.decide({
                    path: { task: t.id },
                    payload: { approved: false, reason: "again", amendment: null },
                  }),
                ),
                new NotPending({ task: t.id, state: "completed" }),
              )
            }),
          { definitions: [Definitions.asksReviewer] },
        ),
      )

      it.effect("a decision nobody waits for is buffered under the worklist's source", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            const answer = yield* f
              .as("sam")
              .tasks.decide({ path: { task: t.id }, payload: { approved: false, reason: "no", amendment: null } })
            assert.deepStrictEqual(answer.delivery, { result: "buffered" })
            // The buffered event is the worklist's decision with the caller as actor: the same
            // identity offered again is a duplicate.
            const decision = new Decision({ approved: false, actor: "sam", reason: "no", amendment: null })
            const again = yield* f.inTenant(
              Effect.flatMap(EventStore, (events) =>
                events.buffer(Tasks.decisionEvent(t.id, decision), Time.Timestamp.make(1_000)),
              ),
            )
            assert.isFalse(again)
          }),
        ),
      )

      it.effect(
        "16 concurrent decides by the holder: exactly those that repeat the stored decision are 200, every other 409",
        () =>
          Http.withServer(
            (f) =>
              Effect.gen(function* () {
                for (let round = 0; round < 3; round++) {
                  const t = yield* open(f)
                  yield* f.as("rita").tasks.claim({ path: { task: t.id } })
                  const answers = yield* Effect.all(
                    Array.from({ length: 16 }, (_, i) =>
                      f.raw("POST", `/tasks/${t.id}/decide`, {
                        as: "rita",
                        headers: { "content-type": "application/json" },
                        body: JSON.stringify({ approved: i % 2 === 0, reason: "checked" }),
                      }),
                    ),
                    { concurrency: "unbounded" },
                  )
                  const record = yield* f.inTenant(
                    Effect.flatMap(EventStore, (events) =>
                      events.accepted(Tasks.WORKLIST_SOURCE, `task-decision:${t.id}`),
                    ),
                  )
                  const approved = (Option.getOrThrow(record).event.payload as { approved: boolean }).approved
                  for (const [i, answer] of answers.entries()) {
                    if ((i % 2 === 0) === approved) {
                      assert.strictEqual(answer.status, 200, `decide ${i} repeats the stored decision: ${answer.text}`)
                      const body = answer.json as { task: { state: string } }
                      assert.strictEqual(body.task.state, "completed")
                    } else {
                      assert.strictEqual(answer.status, 409, `decide ${i} is not the stored decision: ${answer.text}`)
                      // Error bodies name the task as every view of it does.
                      assert.deepStrictEqual(answer.json, {
                        _tag: "NotPending",
                        task: `task_${t.id}`,
                        state: "completed",
                      })
                    }
                  }
                  assert.strictEqual((yield* stored(f, t.id)).state, "completed")
                }
              }),
            { stores: backend.pooled(3) },
          ),
      )

      it.effect("a decide repeated after an outage succeeds again; a different one is refused", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* open(f)
            yield* f.as("rita").tasks.claim({ path: { task: t.id } })
            // The first attempt answered the task and lost its connection before completing it.
            const first = new Decision({ approved: true, actor: "rita", reason: "fine", amendment: { amount: 1 } })
            yield* f.inTenant(
              Effect.flatMap(EventStore, (events) =>
                events.buffer(Tasks.decisionEvent(t.id, first), Time.Timestamp.make(1_000)),
              ),
            )
            const changed = { approved: true, reason: "fine", amendment: { amount: 2 } }
            assertError(
              yield* Effect.flip(f.as("rita").tasks.decide({ path: { task: t.id }, payload: changed })),
              new NotPending({ task: t.id, state: "completed" }),
            )
            // The refusal completes the task its decision of record settled (Runtime.decideTask).
            assert.strictEqual((yield* stored(f, t.id)).state, "completed")
            const same = { approved: true, reason: "fine", amendment: { amount: 1 } }
            const retried = yield* f.as("rita").tasks.decide({ path: { task: t.id }, payload: same })
            assert.deepStrictEqual(retried.delivery, { result: "duplicate" })
            assert.strictEqual(retried.task.state, "completed")
            assert.strictEqual((yield* stored(f, t.id)).state, "completed")
            // Completed: the same decision is still answered (its first answer may have been lost).
            const again = yield* f.as("rita").tasks.decide({ path: { task: t.id }, payload: same })
            assert.deepStrictEqual([again.task.state, again.delivery], ["completed", { result: "duplicate" }])
            assertError(
              yield* Effect.flip(
                f.as("rita").tasks.decide({ path: { task: t.id }, payload: { ...same, reason: "other" } }),
              ),
              new NotPending({ task: t.id, state: "completed" }),
            )
            // Another reviewer repeating the words is not the decision of record.
            assertError(
              yield* Effect.flip(f.as("sam").tasks.decide({ path: { task: t.id }, payload: same })),
              new NotPending({ task: t.id, state: "completed" }),
            )
          }),
        ),
      )
    })
  })
}
