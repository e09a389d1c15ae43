/**
 * §7.6–§7.10 sentences the first waits suites leave open: a duplicate delivered at once, a
 * decision before its task row exists, expiry by Proceed and Escalate, a warned deadline that
 * breaches later, and redelivery of an event claimed for a run while its owner was live.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { CaseId, RunId } from "../../src/domain/Ids.js"
import type { Json } from "../../src/domain/Json.js"
import * as Run from "../../src/domain/Run.js"
import { Decision, type OnExpiry, type TaskSpec } from "../../src/domain/Task.js"
import * as TaskId from "../../src/domain/TaskId.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import * as Worklist from "../../src/runtime/Worklist.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import { fire } from "../support/Races.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ order: Schema.String })
type Input = typeof Input.Type
const key = (order: string) => CorrelationKey.make("order", order)
const PING = "edges.ping"

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Timestamp.make(Math.floor(ms / 1000)),
)

const ping = (order: string, id: string) =>
  new InboundEvent({ source: "edges", id, kind: PING, correlation: [key(order)], payload: { id } })

/** Registers `deadline` ("d", with an optional warning), waits for a ping on it, then acts once. */
const awaiting = (
  counter: Support.Counter,
  capability: string,
  deadline: Deadline.DeadlineSpec,
  warnBefore?: number,
) => {
  const after = Support.counting(counter, `${capability}.after`, { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait",
        body: (input: Input) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("d", deadline, warnBefore)
            const got = yield* cx.awaitEvent({ kind: PING, correlation: [key(input.order)], deadline: "d" })
            yield* cx.perform(after, { n: 1 })
            return got.payload
          }),
      }),
    ],
  })
}

const spec = (onExpiry: OnExpiry, window: Option.Option<Deadline.DeadlineSpec>) =>
  Support.taskSpec({ kind: "edges.approve", onExpiry, window })

/** Performs `before` (which may hold the run), asks `spec`, and refunds when approved. */
const asking = (
  counter: Support.Counter,
  capability: string,
  taskSpec: TaskSpec,
  before: Effect.Effect<void> = Effect.void,
  window: Option.Option<Deadline.DeadlineSpec> = Option.none(),
) => {
  const hold = Support.acting("edges.hold", { mutates: false }, (n) => Effect.as(before, { ok: "hold", n }))
  const refund = Support.counting(counter, `${capability}.refund`, { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "ask",
        body: () =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.perform(hold, { n: 0 })
            yield* Support.registerWindow(window)
            const decision = yield* cx.task(taskSpec)
            if (decision.approved) yield* cx.perform(refund, { n: 40 })
            return { approved: decision.approved, actor: decision.actor }
          }),
      }),
    ],
  })
}

const sealedAs = (run: RunId) =>
  Effect.map(Support.journalOf(run), (records) =>
    Option.getOrNull(Option.fromNullable(Support.ofKind(records, "RunSealed").at(-1)?.kind.outcome)),
  )

/** The task a run at this slot opens: `derive(run, key of task.open over the spec)`, as `Worklist.identity` computes it. */
const taskIdAt = (run: RunId, at: { readonly step: number; readonly ordinal: number }, s: TaskSpec) =>
  TaskId.derive(
    run,
    EffectKey.derive({
      step: at.step as never,
      phase: "forward",
      ordinal: at.ordinal,
      attempt: 1,
      kind: Worklist.TASK_OPEN_KIND,
      args: {
        kind: s.kind,
        candidateRoles: [...s.candidateRoles],
        priority: s.priority,
        onExpiry: s.onExpiry,
        escalateTo: [...s.escalateTo],
        excludedActors: [...s.excludedActors],
        allowUnattended: s.allowUnattended,
      } as Json,
    }),
  )

/** The slot (step, ordinal) of a run's `task.await` announcement. */
const taskSlot = (run: RunId) =>
  Effect.map(Support.journalOf(run), (records) => {
    const started = Support.ofKind(records, "EffectStarted").find(
      (s) => (s.kind.descriptor as { readonly kind: string }).kind === Worklist.TASK_AWAIT_KIND,
    )
    if (started === undefined) throw new Error(`run ${run} announced no task wait`)
    const d = started.kind.descriptor as { readonly ordinal: number; readonly args: { readonly task: string } }
    return { step: started.record.step as number, ordinal: d.ordinal, task: d.args.task }
  })

const runOf = (kase: CaseId): Effect.Effect<RunId, unknown, CaseStore | Tenant> =>
  Effect.flatMap(CaseStore, (c) => c.case(kase)).pipe(
    Effect.flatMap((found) => {
      const run = Option.isSome(found) ? found.value.runs[0] : undefined
      return run === undefined ? Effect.zipRight(Effect.sleep("2 millis"), runOf(kase)) : Effect.succeed(run)
    }),
  )

export const suite = (backend: Backend.Backend) =>
  describe("wait edges", () => {
    it.live(
      "the same event delivered twice at once to a suspended run resumes it once: one Resumed, one Duplicate",
      () => {
        const counter = new Support.Counter()
        const def = awaiting(counter, "edges.dup", Deadline.days(3))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          const answers = yield* fire(2, () => rt.deliver(ping(order, "same")))
          yield* rt.idle
          expect(answers.map((d) => d._tag).sort()).toEqual(["Duplicate", "Resumed"])
          expect(counter.get("edges.dup.after")).toBe(1)
          expect(yield* sealedAs(first.run)).toBe("succeeded")
        }).pipe(Support.on(Support.runtimeOver(backend.pooled(3), [def])), Backend.asFreshTenant)
      },
    )

    it.live(
      "a decision answered before the run reaches cx.task is found by the wait, and the run never suspends",
      () => {
        const counter = new Support.Counter()
        const s = spec("deny", Option.none())
        const gate = Deferred.unsafeMake<void>(undefined as never)
        let held = false
        const def = asking(
          counter,
          "edges.early",
          s,
          Effect.suspend(() => {
            if (held) return Effect.void
            held = true
            return Deferred.await(gate)
          }),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          // A first run, not held, shows the slot a task of this plan sits at; the id derived for
          // it must be the id it opened, or the early answer below would address nothing.
          held = true
          const order0 = `o-${Math.random()}`
          const reference = yield* rt.runCorrelated(def, Run.labeled({ order: order0 }, "test"), "order", [key(order0)])
          expect(reference.status._tag).toBe("Suspended")
          const slot = yield* taskSlot(reference.run)
          expect(taskIdAt(reference.run, slot, s)).toBe(slot.task)

          held = false
          const order = `o-${Math.random()}`
          const kase = (yield* Effect.flatMap(CaseStore, (c) =>
            c.correlateOrOpen("order", [key(order)], Timestamp.make(0)),
          )).case
          const running = yield* Effect.fork(rt.runInCase(def, Run.labeled({ order }, "test"), kase))
          const run = yield* runOf(kase)
          const task = taskIdAt(run, slot, s)
          // The run is held before cx.task: no subscription and no task row exist yet.
          expect(Option.isNone(yield* Effect.flatMap(TaskStore, (t) => t.task(task)))).toBe(true)
          const decision = new Decision({ approved: true, actor: "alice", reason: "early", amendment: null })
          expect(yield* rt.answerTask(task, decision)).toEqual(Runtime.Delivered.Buffered())
          yield* Deferred.succeed(gate, undefined)
          const result = yield* Effect.flatMap(Effect.fromFiber(running), Effect.succeed)
          expect(result.status._tag).toBe("Succeeded")
          expect(Option.getOrThrow(result.output)).toEqual({ approved: true, actor: "alice" })
          expect(counter.get("edges.early.refund")).toBe(1)
          const kinds = (yield* Support.journalOf(run)).map((r) => r.kind.kind)
          expect(kinds).not.toContain("RunSuspended")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live(
      "an overdue task with Proceed (allowUnattended) is answered approved as system:unattended and the run acts",
      () => {
        const counter = new Support.Counter()
        const window = Option.some(Deadline.minutes(0))
        const def = asking(counter, "edges.proceed", spec("proceed", window), Effect.void, window)
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          const report = yield* Sweeper.sweep(Timestamp.make((yield* nowSecs) + 1))
          yield* rt.idle
          expect(report.tasksExpired).toBe(1)
          expect(counter.get("edges.proceed.refund")).toBe(1)
          expect(yield* sealedAs(first.run)).toBe("succeeded")
          const done = Support.ofKind(yield* Support.journalOf(first.run), "EffectDone").find(
            (d) => (d.kind.output as { readonly actor?: string }).actor !== undefined,
          )
          expect(done?.kind.output).toMatchObject({ approved: true, actor: "system:unattended" })
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
          expect(task?.state).toBe("expired")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("an overdue task with Escalate is escalated by the sweeper and stays pending: the run still waits", () => {
      const counter = new Support.Counter()
      const window = Option.some(Deadline.minutes(0))
      const def = asking(counter, "edges.escalate", spec("escalate", window), Effect.void, window)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Suspended")
        const report = yield* Sweeper.sweep(Timestamp.make((yield* nowSecs) + 1))
        yield* rt.idle
        expect(report.tasksEscalated).toBe(1)
        expect(report.tasksExpired).toBe(0)
        const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
        expect(task?.state).toBe("escalated")
        expect(counter.get("edges.escalate.refund")).toBe(0)
        expect(yield* sealedAs(first.run)).toBe(null)
        const evidence = yield* Support.journalOf(Option.getOrThrow(report.record))
        expect(evidence.flatMap((r) => (r.kind.kind === "Swept" ? [r.kind.action] : []))).toContain("task_escalated")
        // The escalated task can still be decided, and its run resumes once.
        const decision = new Decision({ approved: true, actor: "sue", reason: "ok", amendment: null })
        expect(yield* rt.answerTask(task?.id as never, decision)).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
        yield* rt.idle
        expect(counter.get("edges.escalate.refund")).toBe(1)
        expect(yield* sealedAs(first.run)).toBe("succeeded")
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("a sweep between warnAt and the due instant warns once; a sweep past it breaches", () => {
      const counter = new Support.Counter()
      const def = awaiting(counter, "edges.warn", Deadline.minutes(10), 300)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Suspended")
        const kase = Option.getOrThrow(first.case)
        const [d] = yield* Effect.flatMap(CaseStore, (c) => c.deadlines(kase))
        const due = d?.resolvedAt as number
        expect(Option.getOrThrow(d?.warnAt ?? Option.none())).toBe(due - 300)
        const early = yield* Sweeper.sweep(Timestamp.make(due - 400))
        expect(early.warned + early.breached).toBe(0)
        const warned = yield* Sweeper.sweep(Timestamp.make(due - 100))
        expect(warned.warned).toBe(1)
        expect(warned.breached).toBe(0)
        expect((yield* Effect.flatMap(CaseStore, (c) => c.deadlines(kase)))[0]?.state).toBe("warned")
        const again = yield* Sweeper.sweep(Timestamp.make(due - 50))
        expect(again.warned).toBe(0)
        const breached = yield* Sweeper.sweep(Timestamp.make(due))
        expect(breached.breached).toBe(1)
        expect((yield* Effect.flatMap(CaseStore, (c) => c.deadlines(kase)))[0]?.state).toBe("breached")
        expect(Option.getOrThrow(yield* Effect.flatMap(CaseStore, (c) => c.case(kase))).status).toBe("escalated")
        expect(counter.get("edges.warn.after")).toBe(0)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live(
      "an event claimed for a run while another holds its lease is answered Buffered, and redelivery resumes the run once",
      () => {
        const counter = new Support.Counter()
        const def = awaiting(counter, "edges.redeliver", Deadline.days(3))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const journal = yield* JournalStore
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          // A live owner elsewhere: the delivery's lease retries run out and it leaves the answer.
          const lease = yield* journal.acquire(first.run, "elsewhere", 30)
          expect(yield* rt.deliver(ping(order, "while-held"))).toEqual(Runtime.Delivered.Buffered())
          yield* rt.idle
          expect(counter.get("edges.redeliver.after")).toBe(0)
          // Nothing is resumed while the lease is held.
          expect(yield* rt.redeliverClaimed(10)).toBe(0)
          yield* journal.releaseLease(first.run, lease.epoch)
          expect(yield* rt.redeliverClaimed(10)).toBe(1)
          yield* rt.idle
          expect(counter.get("edges.redeliver.after")).toBe(1)
          expect(yield* sealedAs(first.run)).toBe("succeeded")
          expect(yield* rt.redeliverClaimed(10)).toBe(0)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )
  })
