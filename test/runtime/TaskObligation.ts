/**
 * §7.7 and §7.11 "the task's obligation": a task is due with the obligation its spec names, which
 * the run registered and meets or cancels itself; the task registers none of its own. So a case
 * walks from opening through a decided task to `closed`, and a sweep two days later finds nothing
 * to breach. A task naming an obligation that is not registered is refused before anything opens.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ order: Schema.String })
const key = (order: string) => CorrelationKey.make("order", order)
const TWO_DAYS = 2 * 86_400

/** Registers the review's two days, asks, meets the obligation once a person decided, then closes the case. */
const reviewed = (counter: Support.Counter) => {
  const refund = Support.counting(counter, "obligation.refund", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "obligation.reviewed",
    input: Input,
    output: Schema.Boolean,
    plan: [
      Step.make({
        name: "ask",
        body: () =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* Support.registerWindow(Option.some(Deadline.days(2)))
            const decision = yield* cx.task(
              Support.taskSpec({ window: Option.some(Deadline.days(2)), excludedActors: ["agent"] }),
            )
            yield* cx.meetDeadline(Support.REVIEW)
            if (decision.approved) yield* cx.perform(refund, { n: 40 })
            yield* cx.setCaseStatus("closed")
            return decision.approved
          }),
      }),
    ],
  })
}

/** Asks with a spec naming an obligation nobody registered. */
const unregistered = (counter: Support.Counter) => {
  const before = Support.counting(counter, "obligation.before", { mutates: false })
  return RunDefinition.make({
    capability: "obligation.unregistered",
    input: Input,
    output: Schema.Boolean,
    plan: [
      Step.make({
        name: "ask",
        body: () =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.perform(before, { n: 1 })
            const decision = yield* cx.task(Support.taskSpec({ window: Option.some(Deadline.days(2)) }))
            return decision.approved
          }),
      }),
    ],
  })
}

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Math.floor(ms / 1000),
)

export const suite = (backend: Backend.Backend) =>
  describe("a task's obligation", () => {
    it.live(
      "a case opens, its task is decided, the run meets its obligation and closes the case; two days on, a sweep breaches nothing",
      () => {
        const counter = new Support.Counter()
        const def = reviewed(counter)
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          const kase = Option.getOrThrow(first.case)
          const cases = yield* CaseStore
          // One obligation: the run's own. The task is due with it and registered nothing.
          const registered = yield* cases.deadlines(kase)
          expect(registered.map((d) => [d.name, d.state])).toEqual([[Support.REVIEW, "pending"]])
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(kase))
          expect(task?.dueAt).toEqual(Option.some(registered[0]?.resolvedAt))

          const decided = yield* rt.decideTask(
            task?.id as never,
            new Decision({ approved: true, actor: "alice", reason: "ok", amendment: null }),
            ["reviewer"],
          )
          expect(decided.delivered._tag).toBe("Resumed")
          yield* rt.idle
          expect(counter.get("obligation.refund")).toBe(1)
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          expect((yield* cases.deadlines(kase)).map((d) => [d.name, d.state])).toEqual([[Support.REVIEW, "met"]])
          expect(Option.map(yield* cases.case(kase), (c) => c.status)).toEqual(Option.some("closed"))

          const later = yield* Sweeper.sweep(Timestamp.make((yield* nowSecs) + TWO_DAYS + 60))
          expect(later.breached).toBe(0)
          expect(later.tasksExpired).toBe(0)
          expect(Sweeper.needsAttention(later)).toBe(false)
          expect(Option.map(yield* cases.case(kase), (c) => c.status)).toEqual(Option.some("closed"))
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("a task naming an obligation the run never registered is a plan-contract failure; no task opens", () => {
      const counter = new Support.Counter()
      const def = unregistered(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const result = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(result.status._tag).toBe("Failed")
        expect(result.status._tag === "Failed" && result.status.message).toContain(
          `names deadline '${Support.REVIEW}', which is not registered`,
        )
        const kase = Option.getOrThrow(result.case)
        expect(yield* Effect.flatMap(TaskStore, (t) => t.forCase(kase))).toEqual([])
        expect(yield* Effect.flatMap(CaseStore, (c) => c.deadlines(kase))).toEqual([])
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
