/**
 * §7.7 decideTask in the runtime: claim, deliver, complete, in an order where every gap heals.
 * A decide cut off after delivering (its completion lost) is completed by the holder's retry, a
 * decide after a takeover that contradicts the decision of record is refused, and the sweeper's
 * expiry never overrules a decision already delivered.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import type { TaskId } from "../../src/domain/TaskId.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const key = (order: string) => CorrelationKey.make("order", order)

const asking = (counter: Support.Counter, window: Option.Option<Deadline.DeadlineSpec>) =>
  Support.asking("decide", counter, window)

const by = (actor: string, approved = true) => new Decision({ approved, actor, reason: "checked", amendment: null })

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Timestamp.make(Math.floor(ms / 1000)),
)

/** A suspended run asking a reviewer, and its task's id. */
const asked = (def: ReturnType<typeof asking>) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    const order = `o-${Math.random()}`
    const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
    expect(first.status._tag).toBe("Suspended")
    const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
    return { run: first.run, task: task?.id as TaskId }
  })

const stateOf = (task: TaskId) =>
  Effect.map(
    Effect.flatMap(TaskStore, (t) => t.task(task)),
    (t) => Option.map(t, (x) => x.state),
  )

export const suite = (backend: Backend.Backend) =>
  describe("decideTask", () => {
    it.live(
      "claims, delivers and completes; a repeat once the run has the decision is refused and wakes nothing",
      () => {
        const counter = new Support.Counter()
        const def = asking(counter, Option.none())
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const { run, task } = yield* asked(def)
          const first = yield* rt.decideTask(task, by("alice"), ["reviewer"])
          expect(first.delivered).toEqual(Runtime.Delivered.Resumed({ run }))
          expect(first.task.state).toBe("completed")
          expect(yield* stateOf(task)).toEqual(Option.some("completed"))
          yield* rt.idle
          // Once the run has journaled it, the decision event's payload is erased, so a repeat can
          // no longer be matched to it and is refused, waking nothing.
          const again = yield* Effect.flip(rt.decideTask(task, by("alice"), ["reviewer"]))
          expect(again._tag).toBe("NotPending")
          const other = yield* Effect.flip(rt.decideTask(task, by("alice", false), ["reviewer"]))
          expect(other._tag).toBe("NotPending")
          yield* rt.idle
          expect(counter.get("decide.refund")).toBe(1)
          expect(yield* Support.concludedAs(run, "succeeded")).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("a decide cut off after delivering leaves the task claimed; the holder's retry completes it", () => {
      const counter = new Support.Counter()
      const def = asking(counter, Option.none())
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const tasks = yield* TaskStore
        const { run, task } = yield* asked(def)
        // What a decide that died between delivering and completing leaves: claimed, delivered.
        yield* tasks.claim(task, "alice", ["reviewer"])
        expect((yield* rt.answerTask(task, by("alice")))._tag).toBe("Resumed")
        yield* rt.idle
        expect(yield* stateOf(task)).toEqual(Option.some("claimed"))
        // The run journaled the decision (its payload is erased), so the retry cannot be matched
        // to it: refused, but the task is completed, which is what the cut-off decide owed.
        const retried = yield* Effect.flip(rt.decideTask(task, by("alice"), ["reviewer"]))
        expect(retried._tag === "NotPending" && retried.state).toBe("completed")
        expect(yield* stateOf(task)).toEqual(Option.some("completed"))
        yield* rt.idle
        expect(counter.get("decide.refund")).toBe(1)
        expect(yield* Support.concludedAs(run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("after a takeover, a decide contradicting the decision of record is refused and the task completed", () => {
      const counter = new Support.Counter()
      const def = asking(counter, Option.none())
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const tasks = yield* TaskStore
        const { run, task } = yield* asked(def)
        // alice's decide delivered and died; bob takes the task over and decides otherwise.
        yield* tasks.claim(task, "alice", ["reviewer"])
        yield* rt.answerTask(task, by("alice"))
        yield* rt.idle
        yield* tasks.takeOver(task, "alice", "bob", ["reviewer"])
        const refused = yield* Effect.flip(rt.decideTask(task, by("bob", false), ["reviewer"]))
        expect(refused._tag).toBe("NotPending")
        expect(refused._tag === "NotPending" && refused.state).toBe("completed")
        expect(yield* stateOf(task)).toEqual(Option.some("completed"))
        // alice's decision is the one the run acted on, once.
        expect(counter.get("decide.refund")).toBe(1)
        expect(yield* Support.concludedAs(run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("the sweeper's expiry of a task whose decision was delivered completes it instead", () => {
      const counter = new Support.Counter()
      const def = asking(counter, Option.some(Deadline.minutes(0)))
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const tasks = yield* TaskStore
        const { run, task } = yield* asked(def)
        yield* tasks.claim(task, "alice", ["reviewer"])
        yield* rt.answerTask(task, by("alice"))
        yield* rt.idle
        const report = yield* Sweeper.sweep(Timestamp.make((yield* nowSecs) + 1))
        yield* rt.idle
        expect(report.tasksExpired).toBe(0)
        expect(yield* stateOf(task)).toEqual(Option.some("completed"))
        expect(counter.get("decide.refund")).toBe(1)
        expect(yield* Support.concludedAs(run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
