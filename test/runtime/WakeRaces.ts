/**
 * No lost and no double wake-up (issue 16, Acceptance): the answer to a wait (a delivered event, a
 * due timer, a task's decision), the run's own admission and suspension, and two sweepers on two
 * instances over one database fire at random interleavings, with random delays before the wait
 * and before each answer. Every run resumes exactly once to its seal, the act after the wait is
 * performed once (counted outside the journal), every effect key has one outcome and every chain
 * verifies. It proves something only where writers interleave (`concurrentWriters`,
 * PostgreSQL); the other backends run the same trials serialised and must pass too.
 */
import { describe, it } from "@effect/vitest"
import { type Context, Effect, Runtime as EffectRuntime, FastCheck, Layer, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { CaseId, RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Decision, Justification, TaskSpec } from "../../src/domain/Task.js"
import type { TaskId } from "../../src/domain/TaskId.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import * as Waits from "../../src/runtime/Waits.js"
import * as Worklist from "../../src/runtime/Worklist.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import { fire } from "../support/Races.js"
import * as QueuedWake from "./QueuedWake.js"
import * as Support from "./Support.js"

/** Trials per property: `AGENTPLANE_WAKE_RUNS`, 40 by default (about 10 s on PostgreSQL). */
const TRIALS = Number(process.env.AGENTPLANE_WAKE_RUNS ?? 40)
const POOL = 3

type Wait = "event" | "timer" | "task"

const Input = Schema.Struct({ order: Schema.String, id: Schema.Number, pause: Schema.Number })
type Input = typeof Input.Type

const key = (order: string) => CorrelationKey.make("order", order)
const PING = "wake.ping"

/** The act after the wait counts itself per run (`id`), outside the journal. */
const counter = new Support.Counter()
const after = Support.acting("wake.after", { mutates: true, recovery: Run.Recovery.Retry() }, (n) =>
  Effect.sync(() => {
    counter.bump(`after:${n}`)
    return { ok: "after", n }
  }),
)
/** Sleeps a few ms just before the wait is announced: the delay at the suspend boundary. */
const pause = Support.acting("wake.pause", { mutates: false }, (n) =>
  Effect.as(Effect.sleep(`${n} millis`), { ok: "pause", n }),
)

const taskSpec = new TaskSpec({
  kind: "wake.approve",
  justification: new Justification({
    summary: "race",
    proposedAction: { go: true },
    confidence: Option.none(),
    cost: Option.none(),
    evidence: [],
  }),
  candidateRoles: ["reviewer"],
  priority: "normal",
  deadline: Option.none(),
  onExpiry: "deny",
  escalateTo: [],
  excludedActors: [],
  allowUnattended: false,
})

const waiting = (wait: Wait) =>
  RunDefinition.make({
    capability: `wake.${wait}`,
    input: Input,
    output: Schema.Number,
    plan: [
      Step.make({
        name: "wait",
        body: (input: Input) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            if (wait === "event") yield* cx.deadline("w", Deadline.days(3))
            yield* cx.perform(pause, { n: input.pause })
            if (wait === "event") {
              yield* cx.awaitEvent({ kind: PING, correlation: [key(input.order)], deadline: "w" })
            } else if (wait === "timer") {
              // An instant long past: the timer is due the moment it is armed.
              yield* cx.sleepUntil(1)
            } else {
              yield* cx.task(taskSpec)
            }
            return (yield* cx.perform(after, { n: input.id })).n
          }),
      }),
    ],
  })

const definitions = { event: waiting("event"), timer: waiting("timer"), task: waiting("task") }

interface RunSpec {
  /** ms the run sleeps just before its wait. */
  readonly pause: number
  /** ms before the answer is given (event, task). */
  readonly answer: number
  /** Which instance admits the run, and which answers it. */
  readonly admitOnA: boolean
  readonly answerOnA: boolean
  /** The answer's delay counts from the race's start (else from the wait's announce). */
  readonly early: boolean
}
interface Trial {
  readonly runs: ReadonlyArray<RunSpec>
  /** ms before each of the two sweeps of each sweeper. */
  readonly sweepsA: ReadonlyArray<number>
  readonly sweepsB: ReadonlyArray<number>
}

const trial: FastCheck.Arbitrary<Trial> = FastCheck.record({
  runs: FastCheck.array(
    FastCheck.record({
      pause: FastCheck.integer({ min: 0, max: 6 }),
      answer: FastCheck.integer({ min: 0, max: 15 }),
      admitOnA: FastCheck.boolean(),
      answerOnA: FastCheck.boolean(),
      early: FastCheck.boolean(),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  sweepsA: FastCheck.array(FastCheck.integer({ min: 0, max: 15 }), { minLength: 1, maxLength: 2 }),
  sweepsB: FastCheck.array(FastCheck.integer({ min: 0, max: 15 }), { minLength: 1, maxLength: 2 }),
})

type Instance = Context.Context<Support.Services>

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Timestamp.make(Math.floor(ms / 1000)),
)

const decision = new Decision({ approved: true, actor: "alice", reason: "race", amendment: null })

/** The run bound to `kase`, once its admission has attached it. */
const runOf = (kase: CaseId): Effect.Effect<RunId, unknown, Support.Services | Tenant> =>
  Effect.flatMap(CaseStore, (c) => c.case(kase)).pipe(
    Effect.flatMap((found) => {
      const run = Option.isSome(found) ? found.value.runs[0] : undefined
      return run === undefined ? Effect.zipRight(Effect.sleep("1 millis"), runOf(kase)) : Effect.succeed(run)
    }),
  )

/** The args of a run's wait announcement of `kind`, once it is durable. */
const announced = (run: RunId, kind: string): Effect.Effect<unknown, unknown, Support.Services | Tenant> =>
  Effect.flatMap(Support.journalOf(run), (records) => {
    const started = Support.ofKind(records, "EffectStarted").find(
      (s) => (s.kind.descriptor as { readonly kind: string }).kind === kind,
    )
    return started === undefined
      ? Effect.zipRight(Effect.sleep("1 millis"), announced(run, kind))
      : Effect.succeed((started.kind.descriptor as { readonly args: unknown }).args)
  })

/** The task a run waits on, read from its `task.await` announcement. */
const taskOf = (run: RunId) =>
  Effect.map(announced(run, Worklist.TASK_AWAIT_KIND), (args) => (args as { readonly task: TaskId }).task)

const sealedOutcome = (run: RunId) =>
  Effect.map(Support.journalOf(run), (records) =>
    Option.fromNullable(Support.ofKind(records, "RunSealed").at(-1)?.kind.outcome),
  )

/** One trial: every run, its answer and both sweepers at once; then what must hold of each run. */
const check = (wait: Wait, a: Instance, b: Instance, t: Trial, label: string) =>
  Effect.gen(function* () {
    const def = definitions[wait]
    const on = (onA: boolean) => (onA ? a : b)
    const inputs = t.runs.map((r, i) => ({ ...r, order: `${label}-${i}`, id: Math.floor(Math.random() * 1e12) }))
    // The case exists before the race, so the answerer of a task can find the run it holds.
    const cases = yield* Effect.forEach(inputs, (r) =>
      Effect.map(
        Effect.flatMap(nowSecs, (now) =>
          Effect.flatMap(CaseStore, (c) => c.correlateOrOpen("order", [key(r.order)], now)),
        ),
        (c) => c.case,
      ).pipe(Effect.provide(a)),
    )
    const admit = (i: number) => {
      const r = inputs[i] as (typeof inputs)[number]
      return Effect.flatMap(Runtime.Runtime, (rt) =>
        rt.runInCase(def, Run.labeled({ order: r.order, id: r.id, pause: r.pause }, "test"), cases[i] as CaseId),
      ).pipe(Effect.provide(on(r.admitOnA)))
    }
    const answer = (i: number): Effect.Effect<unknown, unknown, Tenant> => {
      const r = inputs[i] as (typeof inputs)[number]
      const rt = Effect.provide(Runtime.Runtime, on(r.answerOnA))
      if (wait === "event") {
        const ping = new InboundEvent({
          source: "race",
          id: `ping-${r.order}`,
          kind: PING,
          correlation: [key(r.order)],
          payload: { i },
        })
        // Half the time the clock starts at the race, so the event may come before the wait;
        // else it starts at the wait's announce, so it lands inside the suspend boundary.
        const from = r.early
          ? Effect.void
          : Effect.provide(
              Effect.flatMap(runOf(cases[i] as CaseId), (run) => announced(run, Waits.AWAIT_KIND)),
              a,
            )
        return from.pipe(
          Effect.zipRight(Effect.sleep(`${r.early ? r.answer : r.answer % 5} millis`)),
          Effect.zipRight(Effect.flatMap(rt, (x) => x.deliver(ping))),
        )
      }
      if (wait === "task") {
        return Effect.gen(function* () {
          const run = yield* runOf(cases[i] as CaseId)
          const task = yield* taskOf(run)
          yield* Effect.sleep(`${r.early ? r.answer : r.answer % 5} millis`)
          return yield* Effect.flatMap(rt, (x) => x.answerTask(task, decision))
        }).pipe(Effect.provide(a))
      }
      return Effect.void
    }
    const sweeper = (instance: Instance, delays: ReadonlyArray<number>) =>
      Effect.forEach(delays, (d) =>
        Effect.zipRight(
          Effect.sleep(`${d} millis`),
          Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)),
        ).pipe(Effect.provide(instance)),
      )
    const n = inputs.length
    const results = yield* fire(2 * n + 2, (k) =>
      k < n ? admit(k) : k < 2 * n ? answer(k - n) : sweeper(k === 2 * n ? a : b, k === 2 * n ? t.sweepsA : t.sweepsB),
    )
    const runs = results.slice(0, n).map((r) => (r as Runtime.RunResult<number>).run)
    const idle = Effect.zipRight(
      Effect.provide(
        Effect.flatMap(Runtime.Runtime, (rt) => rt.idle),
        a,
      ),
      Effect.provide(
        Effect.flatMap(Runtime.Runtime, (rt) => rt.idle),
        b,
      ),
    )
    yield* idle
    // An event or a decision is always given during the race, so its run must be sealed by now
    // (on PostgreSQL this needs the key lock `accept` and `claimFor` share, which closed an
    // acceptance/claimFor race where both missed):
    // by the delivery, by its own claimFor, or by a racing sweeper's redelivery; no later sweep
    // may be needed (a later sweep would hide a wait that read the buffer before subscribing).
    // A timer armed after both sweepers passed waits for the next sweep, as it would in service:
    // it must still be armed, and sweeps, as the periodic sweeper would, finish it.
    for (let round = 0; round < 4; round++) {
      const open: Array<RunId> = []
      for (const run of runs) if (Option.isNone(yield* Effect.provide(sealedOutcome(run), a))) open.push(run)
      if (open.length === 0) break
      expect(wait === "timer" ? [] : open, "runs left unsealed after their answer came: lost wake-ups").toEqual([])
      const waits = yield* Effect.provide(
        Effect.flatMap(EventStore, (e) => e.waiting(1000)),
        a,
      )
      const armed = yield* Effect.provide(
        Effect.flatMap(TimerStore, (x) => x.pending(1000)),
        a,
      )
      for (const run of open) {
        const findable = waits.some((w) => w.run === run) || armed.some((x) => x.run === run)
        expect(findable, `run ${run} is unsealed with nothing left to wake it: a lost wake-up`).toBe(true)
      }
      yield* Effect.provide(
        Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)),
        round % 2 === 0 ? a : b,
      )
      yield* idle
    }
    // A delivery whose lease retries ran out under load puts the wait back (§7.9) even if the
    // owner's own claimFor answered it meanwhile; the next sweep's redelivery retires such a wait
    // (the journal already holds the answer), so nothing is left after one more sweep.
    yield* Effect.provide(
      Effect.flatMap(nowSecs, (now) => Sweeper.sweep(now)),
      b,
    )
    yield* idle
    const leftWaits = yield* Effect.provide(
      Effect.flatMap(EventStore, (e) => e.waiting(1000)),
      a,
    )
    const leftTimers = yield* Effect.provide(
      Effect.flatMap(TimerStore, (x) => x.pending(1000)),
      a,
    )
    for (const [i, run] of runs.entries()) {
      const records = yield* Effect.provide(Support.journalOf(run), a)
      expect(Option.getOrNull(yield* Effect.provide(sealedOutcome(run), a))).toBe("succeeded")
      expect(Support.ofKind(records, "RunSealed").length).toBe(1)
      expect(counter.get(`after:${inputs[i]?.id}`)).toBe(1)
      // Each announced effect key has exactly one outcome record.
      const outcomes = new Map<string, number>()
      for (const r of records) {
        if (Option.isNone(r.effectKey)) continue
        const k = r.effectKey.value
        if (r.kind.kind === "EffectStarted") outcomes.set(k, outcomes.get(k) ?? 0)
        else outcomes.set(k, (outcomes.get(k) ?? 0) + 1)
      }
      for (const [k, count] of outcomes) expect(count, `effect ${k} of run ${run}`).toBe(1)
      const head = yield* Effect.provide(
        Effect.flatMap(JournalStore, (j) => j.verify(run)),
        a,
      )
      expect(head.seq).toBe(records.length)
      expect(leftWaits.some((w) => w.run === run)).toBe(false)
      expect(leftTimers.some((x) => x.run === run)).toBe(false)
    }
  }).pipe(Effect.provideService(Tenant, Backend.freshTenant()))

const property = (backend: Backend.Backend, wait: Wait) =>
  Effect.gen(function* () {
    const defs = Object.values(definitions)
    const a = yield* Layer.build(Support.runtimeOver(backend.pooled(POOL), defs, { owner: "instance-a" }))
    const b = yield* Layer.build(Support.runtimeOver(backend.pooled(POOL), defs, { owner: "instance-b" }))
    const runtime = yield* Effect.runtime<never>()
    let n = 0
    yield* Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(trial, (t) =>
          EffectRuntime.runPromise(runtime)(Effect.orDie(check(wait, a, b, t, `${wait}-${Math.random()}-${n++}`))),
        ),
        { numRuns: TRIALS, interruptAfterTimeLimit: 40_000, markInterruptAsFailure: true },
      ),
    )
  }).pipe(Effect.scoped)

export const suite = (backend: Backend.Backend) =>
  describe("wake races", () => {
    it.live(
      "an event delivered at random against the run's suspension and two sweepers wakes each run exactly once",
      () => property(backend, "event"),
    )
    it.live("a due timer raced by two sweepers' timer passes and the run's own suspension fires exactly once", () =>
      property(backend, "timer"),
    )
    it.live("a decision racing the run's suspension and two sweepers resumes the run exactly once", () =>
      property(backend, "task"),
    )
    QueuedWake.suite(backend)
  })
