/**
 * §7.7 and §7.10: a run asks a person and waits; a decision (or the sweeper's expiry) answers it
 * once; the sweeper breaches and warns deadlines, leaving evidence first.
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

const spec = (window: Option.Option<Deadline.DeadlineSpec>, onExpiry: "deny" | "proceed" = "deny") =>
  Support.taskSpec({ onExpiry, window, excludedActors: ["agent"] })

const asking = (counter: Support.Counter, window: Option.Option<Deadline.DeadlineSpec>) =>
  Support.asking("worklist", counter, window)

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Timestamp.make(Math.floor(ms / 1000)),
)

export const suite = (backend: Backend.Backend) =>
  describe("worklist", () => {
    it.live("a task suspends its run with the task open; the decision resumes it once with the decision", () => {
      const counter = new Support.Counter()
      const def = asking(counter, Option.none())
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Suspended")
        const kase = Option.getOrThrow(first.case)
        const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(kase))
        expect(task?.state).toBe("open")
        expect(task?.excludedActors).toEqual(["agent"])
        const decision = new Decision({ approved: true, actor: "alice", reason: "ok", amendment: null })
        expect(yield* rt.answerTask(task?.id as never, decision)).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
        yield* rt.idle
        expect(counter.get("worklist.refund")).toBe(1)
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        // The task's one decision event: a second answer is a duplicate and wakes nothing.
        expect(yield* rt.answerTask(task?.id as never, decision)).toEqual(Runtime.Delivered.Duplicate())
        yield* rt.idle
        expect(counter.get("worklist.refund")).toBe(1)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live(
      "an overdue task with Deny is expired by the sweeper, which answers it as system:expiry, evidence first",
      () => {
        const counter = new Support.Counter()
        const def = asking(counter, Option.some(Deadline.minutes(0)))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          const now = yield* nowSecs
          const report = yield* Sweeper.sweep(Timestamp.make(now + 1))
          yield* rt.idle
          expect(report.tasksExpired).toBe(1)
          // The task's window was registered as an obligation, which breaches in the same tick.
          expect(report.breached).toBe(1)
          expect(Sweeper.needsAttention(report)).toBe(true)
          expect(counter.get("worklist.refund")).toBe(0)
          const result = yield* Support.journalOf(first.run)
          const sealed = result.find((r) => r.kind.kind === "RunSealed")
          expect(sealed?.kind.kind === "RunSealed" && sealed.kind.outcome).toBe("succeeded")
          // Evidence: one sealed `swept` run whose notes name the expiry and the breach.
          const evidence = yield* Support.journalOf(Option.getOrThrow(report.record))
          const actions = evidence.flatMap((r) => (r.kind.kind === "Swept" ? [r.kind.action] : []))
          expect(actions).toEqual(expect.arrayContaining(["task_expired", "deadline_breached", "case_escalated"]))
          const kase = Option.getOrThrow(first.case)
          const c = Option.getOrThrow(yield* Effect.flatMap(CaseStore, (s) => s.case(kase)))
          expect(c.status).toBe("escalated")
          // A second tick finds nothing more to do.
          const again = yield* Sweeper.sweep(Timestamp.make(now + 2))
          expect(again.tasksExpired + again.breached).toBe(0)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live(
      "cancelling a run suspended on a task resumes it at once: the task expires, nothing after the wait runs, the run unwinds and seals cancelled",
      () => {
        const counter = new Support.Counter()
        const undo = Support.counting(counter, "worklist.undo", { mutates: true, recovery: Run.Recovery.Retry() })
        const reserve = Support.counting(counter, "worklist.reserve", { mutates: true, recovery: Run.Recovery.Retry() })
        const after = Support.counting(counter, "worklist.after", { mutates: true, recovery: Run.Recovery.Retry() })
        const def = RunDefinition.make({
          capability: "worklist.cancel",
          input: Input,
          output: Schema.Unknown,
          plan: [
            Step.make({
              name: "reserve",
              role: Step.compensatable(() => Effect.flatMap(StepCtx, (cx) => cx.perform(undo, { n: 1 }))),
              body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(reserve, { n: 1 })),
            }),
            Step.make({
              name: "ask",
              body: () =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  yield* cx.task(spec(Option.none()))
                  return yield* cx.perform(after, { n: 2 })
                }),
            }),
          ],
        })
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          expect(yield* rt.cancel(first.run, "ops:bob", "customer withdrew")).toBe(true)
          yield* rt.idle
          expect(yield* Support.concludedAs(first.run, "cancelled")).toBe(true)
          expect(counter.get("worklist.after")).toBe(0)
          expect(counter.get("worklist.undo")).toBe(1)
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
          expect(task?.state).toBe("expired")
          const kinds = (yield* Support.journalOf(first.run)).map((r) => r.kind.kind)
          expect(kinds).toContain("RunCancelled")
          expect(kinds).toContain("StepCompensated")
          // Strict replay reproduces the cancellation at the wait, writing nothing.
          const report = yield* rt.replay(first.run)
          expect(report.status._tag).toBe("Cancelled")
          expect(report.reproduced).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("a quiet tick writes no evidence and is quiet", () =>
      Effect.gen(function* () {
        const report = yield* Sweeper.sweep(yield* nowSecs)
        expect(Sweeper.isQuiet(report)).toBe(true)
        expect(Option.isNone(report.record)).toBe(true)
        expect(report.censusUnavailable).toBe(false)
      }).pipe(Support.on(Support.runtime(backend, [])), Backend.asFreshTenant),
    )

    it.live("the recovery pass resumes a run whose owner died, after its lease lapses", () => {
      const counter = new Support.Counter()
      const a = Support.counting(counter, "worklist.recovered", { mutates: true, recovery: Run.Recovery.Retry() })
      const def = RunDefinition.make({
        capability: "worklist.recover",
        input: Input,
        output: Schema.Number,
        plan: [
          Step.make({
            name: "one",
            body: () =>
              Effect.map(
                Effect.flatMap(StepCtx, (cx) => cx.perform(a, { n: 7 })),
                (r) => r.n,
              ),
          }),
        ],
      })
      return Effect.gen(function* () {
        const crashing = Support.runtime(backend, [def], {
          leaseTtlSecs: 1,
          crash: (point, kind) => point === "after_announce" && kind === "worklist.recovered",
        })
        const crashed = yield* Effect.flip(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ order: "r" }, "test"))).pipe(
            Support.on(crashing),
          ),
        )
        expect(crashed._tag).toBe("Crashed")
        const run = (crashed as Runtime.Crashed).run
        yield* Effect.sleep("2100 millis")
        const report = yield* Sweeper.sweep(yield* nowSecs).pipe(Support.on(Support.runtime(backend, [def])))
        expect(report.runsRecovered).toBe(1)
        expect(counter.get("worklist.recovered")).toBe(1)
        expect(yield* Support.concludedAs(run, "succeeded").pipe(Support.on(Support.runtime(backend, [def])))).toBe(
          true,
        )
      }).pipe(Backend.asFreshTenant)
    })
  })
