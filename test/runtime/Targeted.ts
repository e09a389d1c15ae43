/**
 * §7.9 `deliverTo` and §7.7 `cx.openTask`: an event addressed to one run, and a task opened
 * without waiting whose decision a later wait picks up from the buffer.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import type { TaskId } from "../../src/domain/TaskId.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Worklist from "../../src/runtime/Worklist.js"
import { EventStore } from "../../src/services/EventStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ order: Schema.String })
type Input = typeof Input.Type

const key = (order: string) => CorrelationKey.make("order", order)

/** Waits for `parcel.scanned` on its order key, then ships (counted). */
const waiting = (counter: Support.Counter) => {
  const ship = Support.counting(counter, "targeted.ship", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "targeted.await",
    input: Input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait-for-scan",
        body: (input: Input) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("scan", Deadline.days(3))
            const got = yield* cx.awaitEvent({
              kind: "parcel.scanned",
              correlation: [key(input.order)],
              deadline: "scan",
            })
            yield* cx.perform(ship, { n: 1 })
            return got.payload
          }),
      }),
    ],
  })
}

const scan = (order: string, id: string, payload: { readonly at: string } = { at: "dock" }) =>
  new InboundEvent({ source: "scanner", id, kind: "parcel.scanned", correlation: [key(order)], payload })

/** Opens a task without waiting, performs something, then waits for the task's decision. */
const openThenAwait = (counter: Support.Counter, onExpiry: "deny" | "proceed" = "deny") => {
  const between = Support.counting(counter, "targeted.between", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: `targeted.open.${onExpiry}`,
    input: Input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "open-then-wait",
        body: () =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const id = yield* cx.openTask(Support.taskSpec({ onExpiry, excludedActors: ["agent"] }))
            counter.bump(`opened:${id}`)
            yield* cx.perform(between, { n: 1 })
            yield* cx.deadline("decision", Deadline.days(3))
            const got = yield* cx.awaitEvent({
              kind: Worklist.DECIDED_KIND,
              correlation: [CorrelationKey.make("task", id)],
              deadline: "decision",
            })
            return { task: id, decision: got.payload }
          }),
      }),
    ],
  })
}

const decision = (approved: boolean) =>
  new Decision({ approved, actor: "reviewer-1", reason: "checked", amendment: null })

export const suite = (backend: Backend.Backend) =>
  describe("targeted delivery and open tasks", () => {
    it.live("deliverTo resumes the named run only, even when another run waits on the same key", () => {
      const counter = new Support.Counter()
      const def = waiting(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const a = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        const b = yield* rt.runInCase(def, Run.labeled({ order }, "test"), Option.getOrThrow(a.case))
        expect(a.status._tag).toBe("Suspended")
        expect(b.status._tag).toBe("Suspended")
        // b subscribed later, so a plain deliver would pick a; deliverTo picks b.
        expect(yield* rt.deliverTo(b.run, scan(order, "scan-1", { at: "gate" }))).toEqual(
          Runtime.Delivered.Resumed({ run: b.run }),
        )
        yield* rt.idle
        expect(yield* Support.concludedAs(b.run, "succeeded")).toBe(true)
        expect(yield* Support.concludedAs(a.run, "succeeded")).toBe(false)
        expect(counter.get("targeted.ship")).toBe(1)
        const done = Support.recordsOfKind(yield* Support.journalOf(b.run), "EffectDone")
        expect(done.some((r) => JSON.stringify(r.kind.output) === JSON.stringify({ at: "gate" }))).toBe(true)
        const waits = yield* Effect.flatMap(EventStore, (e) => e.waiting(1000))
        expect(waits.some((w) => w.run === b.run)).toBe(false)
        expect(waits.some((w) => w.run === a.run)).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("deliverTo a run that awaits no such event is a plan-contract error and stores nothing", () => {
      const counter = new Support.Counter()
      const def = waiting(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const a = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        const wrongKey = yield* Effect.flip(rt.deliverTo(a.run, scan(`other-${order}`, "scan-x")))
        expect(wrongKey._tag).toBe("PlanContract")
        expect(wrongKey._tag === "PlanContract" && wrongKey.detail).toContain("parcel.scanned")
        expect(Option.isNone(yield* Effect.flatMap(EventStore, (e) => e.accepted("scanner", "scan-x")))).toBe(true)
        // The run still waits and a right delivery still wakes it.
        expect(yield* rt.deliverTo(a.run, scan(order, "scan-2"))).toEqual(Runtime.Delivered.Resumed({ run: a.run }))
        yield* rt.idle
        expect(counter.get("targeted.ship")).toBe(1)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("deliverTo twice with one (source, id) resumes once; the repeat is a duplicate", () => {
      const counter = new Support.Counter()
      const def = waiting(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const a = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect((yield* rt.deliverTo(a.run, scan(order, "scan-3")))._tag).toBe("Resumed")
        yield* rt.idle
        expect(yield* rt.deliverTo(a.run, scan(order, "scan-3"))).toEqual(Runtime.Delivered.Duplicate())
        yield* rt.idle
        expect(counter.get("targeted.ship")).toBe(1)
        expect(yield* Support.concludedAs(a.run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("openTask opens the task without waiting; its decision answers a later wait on the task key", () => {
      const counter = new Support.Counter()
      const def = openThenAwait(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        // The run opens the task, performs, then waits for the decision (not there yet).
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Suspended")
        expect(counter.get("targeted.between")).toBe(1)
        const tasks = yield* TaskStore
        const mine = (yield* tasks.queue(["reviewer"], 1000)).filter((t) => t.run === first.run)
        expect(mine.length).toBe(1)
        const task = mine[0]?.id as TaskId
        expect(mine[0]?.state).toBe("open")
        expect(counter.get(`opened:${task}`)).toBe(1)
        // The journal has one task.open effect, answered with the task's id.
        const opens = Support.recordsOfKind(yield* Support.journalOf(first.run), "EffectStarted").filter(
          (r) => (r.kind.descriptor as { kind?: string }).kind === Worklist.TASK_OPEN_KIND,
        )
        expect(opens.length).toBe(1)
        expect(yield* rt.answerTask(task, decision(true))).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
        yield* rt.idle
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        // Resume replayed task.open: one row, and the effect between ran once.
        expect(counter.get("targeted.between")).toBe(1)
        expect((yield* tasks.queue(["reviewer"], 1000)).filter((t) => t.run === first.run).length).toBe(1)
        const output = Support.recordsOfKind(yield* Support.journalOf(first.run), "EffectDone").find(
          (r) =>
            Option.isSome(r.effectKey) &&
            opens.some((o) => Option.contains(o.effectKey, r.effectKey.pipe(Option.getOrThrow))),
        )
        expect(output?.kind.output).toBe(task)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("openTask with on expiry 'proceed' is refused as a plan contract, and no task is opened", () => {
      const counter = new Support.Counter()
      const def = openThenAwait(counter, "proceed")
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Failed")
        expect(first.status._tag === "Failed" && first.status.message).toContain("proceed")
        expect(counter.get("targeted.between")).toBe(0)
        const tasks = yield* TaskStore
        expect((yield* tasks.queue(["reviewer"], 1000)).some((t) => t.run === first.run)).toBe(false)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
