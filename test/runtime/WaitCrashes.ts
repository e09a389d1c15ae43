/**
 * Crashes inside waits (§7.6–§7.10), boundary by boundary: a process dies right after one store
 * call of a suspend, a wake-up, a delivery, a decide or a sweep became durable (every later store
 * call of that process fails, and nothing it held is released, as with `kill -9`), then a healthy
 * process recovers by sweeping (and by the client retrying its delivery or decide). The end state
 * is exact: the run sealed succeeded, its act performed once, every announced effect with exactly
 * one outcome, no wait, timer or quota slot left behind, the task completed.
 */
import { describe, it } from "@effect/vitest"
import { Clock, Effect, Option, Schedule, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import { type Boundary, call, dying } from "./Dying.js"
import * as Support from "./Support.js"

type Workload = "event" | "task" | "sleep"

const key = (order: string) => CorrelationKey.make("order", order)

/** One run per workload: it waits (an event, a reviewer's decision, a moment), then acts once. */
const definitions = (counter: Support.Counter) => {
  const act = Support.counting(counter, "waitcrash.act", { mutates: true, recovery: Run.Recovery.Retry() })
  const event = RunDefinition.make({
    capability: "waitcrash.event",
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait",
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("paid", Deadline.days(3))
            const got = yield* cx.awaitEvent({
              kind: "waitcrash.paid",
              correlation: [key(input.order)],
              deadline: "paid",
            })
            return (yield* cx.perform(act, { n: (got.payload as { readonly n: number }).n })).n
          }),
      }),
    ],
  })
  const sleep = Support.sleepThenAct("waitcrash.sleep", act, Schema.Struct({ order: Schema.String }))
  // Its act is `waitcrash.refund`, counted under that name.
  const task = Support.asking("waitcrash", counter, Option.none())
  return { event, sleep, task }
}

const actOf = (w: Workload) => (w === "task" ? "waitcrash.refund" : "waitcrash.act")

const paidEvent = (order: string) =>
  new InboundEvent({
    source: "psp",
    id: `paid-${order}`,
    kind: "waitcrash.paid",
    correlation: [key(order)],
    payload: { n: 7 },
  })

const alice = new Decision({ approved: true, actor: "alice", reason: "checked", amendment: null })

const bounded = () =>
  new Quota.TenantQuota({
    maxConcurrentRuns: Option.some(10),
    maxTokensPerPeriod: Option.none(),
    maxMinorUnitsPerPeriod: Option.none(),
    period: "monthly",
  })

const nowSecs = Effect.map(Clock.currentTimeMillis, (ms) => Timestamp.make(Math.floor(ms / 1000)))

/** The stimulus that answers the workload's wait: the event, alice's decision, or a sweep that fires the timer. */
const stimulate = (w: Workload, order: string, kase: Option.Option<string>) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    if (w === "event") return yield* Effect.asVoid(rt.deliver(paidEvent(order)))
    if (w === "sleep") return yield* Effect.asVoid(Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)))
    if (Option.isNone(kase)) return
    const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(kase.value as never))
    if (task !== undefined && task.state !== "completed") {
      yield* Effect.ignore(rt.decideTask(task.id, alice, ["reviewer"]))
    }
  })

/**
 * Recovery by a healthy process: the client repeats its stimulus (a retried POST, a retried
 * decide) and the sweeper ticks, until the run is sealed. The sweeps run 120 s ahead, past any
 * timer claim the dead process took; its lease (1 s, the store's clock) lapses on its own.
 */
const recover = (w: Workload, run: RunId, order: string) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    const clock = yield* Effect.clock
    const kase = yield* Effect.flatMap(CaseStore, (c) => c.correlate([key(order)]))
    yield* Effect.gen(function* () {
      yield* Effect.ignore(stimulate(w, order, kase))
      yield* rt.idle
      yield* Effect.ignore(
        Effect.withClock(
          Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)),
          Support.clockAhead(clock, 120),
        ),
      )
      yield* rt.idle
      if (!(yield* Support.concludedAs(run, "succeeded"))) return yield* Effect.fail("not sealed yet")
    }).pipe(Effect.retry(Schedule.spaced("250 millis").pipe(Schedule.upTo("20 seconds"))), Effect.orDie)
    // A decide cut off before it completed the task is completed by the client's retry.
    yield* Effect.ignore(stimulate(w, order, kase))
    return kase
  })

/** The exact end state after recovery. */
const expectSettled = (w: Workload, run: RunId, kase: Option.Option<string>, counter: Support.Counter, acts: number) =>
  Effect.gen(function* () {
    expect(yield* Support.concludedAs(run, "succeeded")).toBe(true)
    expect(counter.get(actOf(w))).toBe(acts)
    const records = yield* Support.journalOf(run)
    // Every announced effect (the wait's included) has exactly one outcome: resumed exactly once.
    const started = Support.ofKind(records, "EffectStarted").map((s) => Option.getOrThrow(s.record.effectKey))
    expect(new Set(started).size).toBe(started.length)
    for (const k of started) {
      const outcomes = records.filter((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, k))
      expect(outcomes.map((r) => r.kind.kind)).toEqual(["EffectDone"])
    }
    expect(Support.ofKind(records, "RunSealed").map((s) => s.kind.outcome)).toEqual(["succeeded"])
    expect((yield* Effect.flatMap(EventStore, (e) => e.waiting(10_000))).filter((s) => s.run === run)).toEqual([])
    expect((yield* Effect.flatMap(TimerStore, (t) => t.pending(10_000))).filter((t) => t.run === run)).toEqual([])
    expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
    if (w === "task") {
      const tasks = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(kase) as never))
      expect(tasks.map((t) => t.state)).toEqual(["completed"])
    }
  })

/** Whether the journal holds the outcome of the act `kind` (so recovery must not perform it again). */
const actSettled = (run: RunId, kind: string) =>
  Effect.map(Support.journalOf(run), (records) =>
    Support.ofKind(records, "EffectStarted").some(
      (s) =>
        (s.kind.descriptor as { readonly kind?: string } | null)?.kind === kind &&
        records.some(
          (r) => r.kind.kind === "EffectDone" && Option.contains(r.effectKey, Option.getOrThrow(s.record.effectKey)),
        ),
    ),
  )

interface Scenario {
  readonly name: string
  readonly workload: Workload
  /**
   * Who dies: the run's own process while it suspends, a process waking it (delivery, decide,
   * sweep), or a sweeper's recovery pass taking over a run whose process died after subscribing.
   */
  readonly dies: "suspending" | "waking" | "recovering"
  readonly boundary: Boundary
}

const append = (kind: string): Boundary => ({
  store: "JournalStore",
  method: "append",
  when: (args) =>
    (args[2] as ReadonlyArray<{ readonly kind: { readonly kind: string } }>).some((a) => a.kind.kind === kind),
})

export const scenarios: ReadonlyArray<Scenario> = [
  // Suspend: subscription durable → task opened → RunSuspended journaled → lease released → slot released.
  {
    name: "suspend, after the subscription is durable",
    workload: "event",
    dies: "suspending",
    boundary: call("EventStore", "subscribe"),
  },
  {
    name: "suspend, after the task is opened in beforeSuspend",
    workload: "task",
    dies: "suspending",
    boundary: call("TaskStore", "open"),
  },
  {
    name: "suspend, after the timer is armed",
    workload: "sleep",
    dies: "suspending",
    boundary: call("TimerStore", "arm"),
  },
  {
    name: "suspend, after RunSuspended is journaled",
    workload: "event",
    dies: "suspending",
    boundary: append("RunSuspended"),
  },
  {
    name: "suspend, after the lease is released",
    workload: "task",
    dies: "suspending",
    boundary: call("JournalStore", "releaseLease"),
  },
  {
    name: "suspend, after the lease is released, before the quota slot",
    workload: "sleep",
    dies: "suspending",
    boundary: call("JournalStore", "releaseLease"),
  },
  // Deliver: event accepted and claimed → wake (lease, journal read, first commit) → unsubscribe.
  // A death right after `accept` matched, before the wake took the lease (issue 16): the wait is
  // kept, marked elected, so the redelivery pass (it walks waits) finds the run and `claimFor`
  // hands it its claimed event; deleted, as it was, the wake-up was lost.
  { name: "deliver, after accept matched", workload: "event", dies: "waking", boundary: call("EventStore", "accept") },
  { name: "decide, after accept matched", workload: "task", dies: "waking", boundary: call("EventStore", "accept") },
  {
    name: "resume, after the lease is taken",
    workload: "event",
    dies: "waking",
    boundary: call("JournalStore", "acquire"),
  },
  {
    name: "resume, after the journal is read",
    workload: "event",
    dies: "waking",
    boundary: call("JournalStore", "read"),
  },
  {
    name: "resume, after the first commit carrying the answer",
    workload: "event",
    dies: "waking",
    boundary: append("EffectDone"),
  },
  {
    name: "deliver, after unsubscribe, before the lease is released",
    workload: "event",
    dies: "waking",
    boundary: call("EventStore", "unsubscribe"),
  },
  // Decide: claimed → decision stored and delivered → task completed.
  { name: "decide, after the task is claimed", workload: "task", dies: "waking", boundary: call("TaskStore", "claim") },
  {
    name: "decide, after the woken run's first commit",
    workload: "task",
    dies: "waking",
    boundary: append("EffectDone"),
  },
  // The sweeper's recovery pass: lease taken over (epoch bumped) → the recovered run suspends again.
  {
    name: "recovery pass, after the dead owner's lease is taken over",
    workload: "event",
    dies: "recovering",
    boundary: call("JournalStore", "acquire"),
  },
  {
    name: "recovery pass, after the recovered run's RunSuspended",
    workload: "event",
    dies: "recovering",
    boundary: append("RunSuspended"),
  },
  // The sweeper's timer pass: claimed → the batch's leases → first commit with the disarm.
  {
    name: "timer pass, after the due timer is claimed",
    workload: "sleep",
    dies: "waking",
    boundary: call("TimerStore", "claimDue"),
  },
  {
    name: "timer pass, after the batch's leases are taken",
    workload: "sleep",
    dies: "waking",
    boundary: call("JournalStore", "acquireMany"),
  },
  {
    name: "timer pass, after the woken run's first commit",
    workload: "sleep",
    dies: "waking",
    boundary: append("EffectDone"),
  },
  {
    name: "timer pass, after the timer is disarmed",
    workload: "sleep",
    dies: "waking",
    boundary: call("TimerStore", "disarm"),
  },
]

/** Runs one scenario: a run waits, a process dies at the boundary, a healthy process recovers. */
const crashAndRecover = (backend: Backend.Backend, s: Scenario) => {
  const counter = new Support.Counter()
  const defs = definitions(counter)
  const def = defs[s.workload]
  const order = `o-${Math.random()}`
  const faulty = dying(backend.layer)
  const options = { quota: bounded, leaseTtlSecs: 1 }
  const doomed = Support.runtimeOver(faulty.stores, [def], options)
  const healthy = Support.runtime(backend, [def], { quota: bounded, leaseTtlSecs: 5 })
  const start = Effect.flatMap(Runtime.Runtime, (rt) =>
    rt.runCorrelated(def as RunDefinition.Any as never, Run.labeled({ order }, "test"), "order", [key(order)]),
  )
  return Effect.gen(function* () {
    let run: RunId
    if (s.dies === "suspending") {
      faulty.arm(s.boundary)
      yield* Support.on(doomed)(Effect.either(start))
      run = Option.getOrThrow(faulty.firstRun())
    } else if (s.dies === "recovering") {
      const first = dying(backend.layer)
      first.arm(call("EventStore", "subscribe"))
      yield* Support.on(Support.runtimeOver(first.stores, [def], options))(Effect.either(start))
      run = Option.getOrThrow(first.firstRun())
      const r = run
      // The first owner's lease lapses; then a sweeper takes the run over and dies at the boundary.
      yield* Support.on(healthy)(
        Effect.flatMap(JournalStore, (j) => j.abandonedRuns(10_000)).pipe(
          Effect.filterOrFail((runs) => runs.includes(r)),
          Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("10 seconds"))),
          Effect.orDie,
        ),
      )
      faulty.arm({ ...s.boundary, when: (args) => args[0] === r && (s.boundary.when?.(args) ?? true) })
      yield* Support.on(doomed)(Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)))
    } else {
      const first = yield* Support.on(healthy)(start)
      expect(first.status._tag).toBe("Suspended")
      run = first.run
      faulty.arm(s.boundary)
      const kase = first.case as Option.Option<string>
      yield* Support.on(doomed)(
        Effect.zipRight(
          Effect.ignore(stimulate(s.workload, order, kase)),
          Effect.flatMap(Runtime.Runtime, (rt) => rt.idle),
        ),
      )
    }
    // The boundary was reached: the process died there, not before.
    expect(faulty.dead()).toBe(true)
    // §7.1 Retry: an act whose outcome the dead process did not make durable is performed again.
    const acted = counter.get(actOf(s.workload))
    const settled = yield* Support.on(healthy)(actSettled(run, actOf(s.workload)))
    const kase = yield* Support.on(healthy)(recover(s.workload, run, order))
    yield* Support.on(healthy)(expectSettled(s.workload, run, kase, counter, settled ? acted : acted + 1))
  }).pipe(Backend.asFreshTenant)
}

/**
 * deliverTo (§7.9) cut off after its match committed: the event is stored, claimed for the run,
 * and the wait kept. The sender's retry under the same (source, id) carries another payload; the
 * run is answered with the payload of record, once.
 */
const deliverToRetried = (backend: Backend.Backend) => {
  const counter = new Support.Counter()
  const def = definitions(counter).event
  const order = `o-${Math.random()}`
  const faulty = dying(backend.layer)
  const healthy = Support.runtime(backend, [def], { leaseTtlSecs: 5 })
  return Effect.gen(function* () {
    const first = yield* Support.on(healthy)(
      Effect.flatMap(Runtime.Runtime, (rt) =>
        rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)]),
      ),
    )
    expect(first.status._tag).toBe("Suspended")
    faulty.arm(call("EventStore", "deliverTo"))
    const cut = yield* Support.on(Support.runtimeOver(faulty.stores, [def], { leaseTtlSecs: 1 }))(
      Effect.flatMap(Runtime.Runtime, (rt) => Effect.either(rt.deliverTo(first.run, paidEvent(order)))),
    )
    expect(faulty.dead()).toBe(true)
    expect(cut._tag).toBe("Left")
    const retry = new InboundEvent({ ...paidEvent(order), payload: { n: 99 } })
    const again = yield* Support.on(healthy)(
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const answered = yield* rt.deliverTo(first.run, retry)
        yield* rt.idle
        return answered
      }),
    )
    expect(again).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
    const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
    // The act ran with the stored payload's n, not the retry's.
    expect(
      Support.ofKind(records, "EffectDone")
        .map((d) => d.kind.output)
        .slice(-2),
    ).toEqual([{ n: 7 }, { ok: "waitcrash.act", n: 7 }])
    expect(counter.get("waitcrash.act")).toBe(1)
    expect(yield* Effect.provide(Support.concludedAs(first.run, "succeeded"), backend.layer)).toBe(true)
  }).pipe(Backend.asFreshTenant)
}

export const suite = (backend: Backend.Backend) =>
  describe("crashes inside waits", () => {
    for (const s of scenarios) {
      it.live(`${s.workload}: dies at ${s.name}; recovered, it resumes once and ends consistent`, () =>
        crashAndRecover(backend, s),
      )
    }
    it.live("deliverTo cut off after its match: the retry with another payload answers the stored one, once", () =>
      deliverToRetried(backend),
    )
  })
