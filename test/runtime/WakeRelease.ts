/**
 * A wake-up's release (disarm the timer, drop the wait) commits in the same transaction as the
 * answer it retires (§7.9, §7.10 pass 5): a process killed inside that commit leaves neither
 * durable (the timer still armed, the wait still registered, the lease left to lapse), one killed
 * right after it leaves both; never an answer with its timer armed, or a timer gone unanswered.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Timestamp } from "../../src/domain/Time.js"
import { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { EventStore } from "../../src/services/EventStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import { dying } from "./Dying.js"
import * as Support from "./Support.js"

const key = (order: string) => CorrelationKey.make("order", order)

const definitions = (counter: Support.Counter) => {
  const act = Support.counting(counter, "wakerelease.act", { mutates: true, recovery: Run.Recovery.Retry() })
  const sleeper = Support.sleepThenAct("wakerelease.sleep", act, Schema.Struct({ n: Schema.Number }))
  const waiter = RunDefinition.make({
    capability: "wakerelease.event",
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait-then-act",
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("paid", Deadline.days(3))
            yield* cx.awaitEvent({ kind: "wakerelease.paid", correlation: [key(input.order)], deadline: "paid" })
            return yield* cx.perform(act, { n: 1 })
          }),
      }),
    ],
  })
  // A read after the wake: its announcement carries the answer's commit (§7.11), so a failed
  // disarm keeps the read from acting, where a read that acted first would act twice.
  const read = Support.counting(counter, "wakerelease.read", { mutates: false })
  const reader = Support.sleepThenAct("wakerelease.sleep-read", read, Schema.Struct({ n: Schema.Number }))
  return { sleeper, waiter, reader }
}

const isFired = (output: unknown) => typeof output === "object" && output !== null && "fired_at" in output

const killed = () => new BackendError({ detail: "injected: killed inside the commit, after the release's statements" })

/**
 * The stores, with the first release (`TimerStore.disarm` or `EventStore.unsubscribe`) failing
 * inside the journal's transaction: on a database after doing its writes, a process dying before
 * its COMMIT, so the rollback must undo the release's writes with the answer's. A memory verb is
 * one atomic step (it writes all or fails before writing, and a killed process keeps no memory),
 * so there the release fails before it writes and the journal's write must be put back.
 */
const killedInsideRelease = (backend: Backend.Backend) => {
  const base = backend.layer
  let kills = 0
  const once = <A, R>(effect: Effect.Effect<A, BackendError, R>) =>
    Effect.suspend(() => {
      if (kills > 0) return effect
      kills += 1
      return Option.isSome(backend.sql) ? Effect.zipRight(effect, Effect.fail(killed())) : Effect.fail(killed())
    })
  const timers = Layer.effect(
    TimerStore,
    Effect.map(TimerStore, (t) => TimerStore.of({ ...t, disarm: (run, effect) => once(t.disarm(run, effect)) })),
  ).pipe(Layer.provide(base))
  const events = Layer.effect(
    EventStore,
    Effect.map(EventStore, (e) =>
      EventStore.of({ ...e, unsubscribe: (run, effect) => once(e.unsubscribe(run, effect)) }),
    ),
  ).pipe(Layer.provide(base))
  return { stores: Layer.mergeAll(base, timers, events), kills: () => kills }
}

const firedAnswers = (run: RunId) =>
  Effect.map(Support.journalOf(run), (records) =>
    records.filter((r) => r.kind.kind === "EffectDone" && isFired(r.kind.output)),
  )

const armedFor = (run: RunId) =>
  Effect.flatMap(TimerStore, (t) => t.pending(10_000)).pipe(Effect.map((ts) => ts.some((t) => t.run === run)))

const waitsOf = (run: RunId) =>
  Effect.flatMap(EventStore, (e) => e.waiting(10_000)).pipe(Effect.map((ws) => ws.filter((w) => w.run === run)))

export const suite = (backend: Backend.Backend) =>
  describe("wake-up release", () => {
    it.live("a timer wake-up killed inside its answer's commit leaves the timer armed and no answer", () => {
      const counter = new Support.Counter()
      const { sleeper } = definitions(counter)
      const faulty = killedInsideRelease(backend)
      const healthy = Support.runtime(backend, [sleeper], { leaseTtlSecs: 1 })
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.run(sleeper, Run.labeled({ n: 1 }, "test"))
        expect(first.status._tag).toBe("Suspended")
        yield* rt.fireTimers(128)
        yield* rt.idle
        expect(faulty.kills()).toBe(1)
        // Neither half is durable: the disarm's DELETE went with the answer's rollback.
        expect(yield* firedAnswers(first.run)).toHaveLength(0)
        expect(yield* armedFor(first.run)).toBe(true)
        expect(counter.get("wakerelease.act")).toBe(0)
        // The lease lapses; a sweep past the claim's 60 s fires the timer again and the run ends once.
        yield* Support.on(healthy)(Support.resumeAfterLapse(first.run))
        const clock = yield* Effect.clock
        const again = yield* Support.on(healthy)(
          Effect.flatMap(Runtime.Runtime, (h) =>
            Effect.zipLeft(Effect.withClock(h.fireTimers(128), Support.clockAhead(clock, 120)), h.idle),
          ),
        )
        expect(again.fired).toBe(1)
        expect(counter.get("wakerelease.act")).toBe(1)
        expect(yield* firedAnswers(first.run)).toHaveLength(1)
        expect(yield* armedFor(first.run)).toBe(false)
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtimeOver(faulty.stores, [sleeper], { leaseTtlSecs: 1 })), Backend.asFreshTenant)
    })

    it.live(
      "a failed disarm before a read: the read never acts and the sweep counts a wake failure; the next sweep fires the timer once, one answer, one read",
      () => {
        const counter = new Support.Counter()
        const { reader } = definitions(counter)
        const faulty = killedInsideRelease(backend)
        const healthy = Support.runtime(backend, [reader], { leaseTtlSecs: 1 })
        const nowSecs = Effect.map(
          Effect.clockWith((c) => c.currentTimeMillis),
          (ms) => Math.floor(ms / 1000),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.run(reader, Run.labeled({ n: 1 }, "test"))
          expect(first.status._tag).toBe("Suspended")
          const swept = yield* Sweeper.sweep(Timestamp.make(yield* nowSecs))
          yield* rt.idle
          expect(faulty.kills()).toBe(1)
          // Nothing durable, so nothing fired: the pass says so instead of claiming the timer.
          expect(swept.timersFired).toBe(0)
          expect(swept.wakeFailures).toBe(1)
          expect(Sweeper.needsAttention(swept)).toBe(true)
          expect(counter.get("wakerelease.read")).toBe(0)
          expect(yield* firedAnswers(first.run)).toHaveLength(0)
          expect(yield* armedFor(first.run)).toBe(true)
          // The lease lapses and the run is recovered (it waits again); a sweep past the timer
          // claim's 60 s fires it: one answer, one read.
          yield* Support.on(healthy)(Support.resumeAfterLapse(first.run))
          const again = yield* Support.on(healthy)(
            Effect.gen(function* () {
              const h = yield* Runtime.Runtime
              const clock = yield* Effect.clock
              const later = Timestamp.make((yield* nowSecs) + 120)
              const report = yield* Effect.withClock(Sweeper.sweep(later), Support.clockAhead(clock, 120))
              yield* h.idle
              return report
            }),
          )
          expect(again.timersFired).toBe(1)
          expect(again.wakeFailures).toBe(0)
          expect(counter.get("wakerelease.read")).toBe(1)
          expect(yield* firedAnswers(first.run)).toHaveLength(1)
          expect(yield* armedFor(first.run)).toBe(false)
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        }).pipe(Support.on(Support.runtimeOver(faulty.stores, [reader], { leaseTtlSecs: 1 })), Backend.asFreshTenant)
      },
    )

    it.live("a timer wake-up killed right after its answer's commit has already disarmed the timer", () => {
      const counter = new Support.Counter()
      const { sleeper } = definitions(counter)
      const faulty = dying(backend.layer)
      const healthy = Support.runtime(backend, [sleeper], { leaseTtlSecs: 5 })
      return Effect.gen(function* () {
        const first = yield* Support.on(healthy)(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.run(sleeper, Run.labeled({ n: 1 }, "test"))),
        )
        expect(first.status._tag).toBe("Suspended")
        faulty.arm({
          store: "JournalStore",
          method: "append",
          when: (args) =>
            (args[2] as ReadonlyArray<{ readonly kind: { readonly kind: string } }>).some(
              (a) => a.kind.kind === "EffectDone",
            ),
        })
        yield* Support.on(Support.runtimeOver(faulty.stores, [sleeper], { leaseTtlSecs: 1 }))(
          Effect.flatMap(Runtime.Runtime, (rt) => Effect.zipRight(rt.fireTimers(128), rt.idle)),
        )
        expect(faulty.dead()).toBe(true)
        // Dead before any later store call, yet both halves are durable: one commit held them.
        const state = yield* Effect.provide(
          Effect.all({ answers: firedAnswers(first.run), armed: armedFor(first.run) }),
          backend.layer,
        )
        expect(state.answers).toHaveLength(1)
        expect(state.armed).toBe(false)
      }).pipe(Backend.asFreshTenant)
    })

    it.live("a delivery killed inside its answer's commit keeps the wait registered and journals no answer", () => {
      const counter = new Support.Counter()
      const { waiter } = definitions(counter)
      const faulty = killedInsideRelease(backend)
      const healthy = Support.runtime(backend, [waiter], { leaseTtlSecs: 1 })
      const order = `o-${Math.random()}`
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.runCorrelated(waiter, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(first.status._tag).toBe("Suspended")
        const answered = Support.ofKind(yield* Support.journalOf(first.run), "EffectDone").length
        const delivered = yield* rt.deliver(
          new InboundEvent({
            source: "psp",
            id: `paid-${order}`,
            kind: "wakerelease.paid",
            correlation: [key(order)],
            payload: { n: 7 },
          }),
        )
        expect(delivered).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
        yield* rt.idle
        expect(faulty.kills()).toBe(1)
        const records = yield* Support.journalOf(first.run)
        expect(Support.ofKind(records, "EffectDone")).toHaveLength(answered)
        expect(yield* waitsOf(first.run)).not.toHaveLength(0)
        // Recovered after the lapse, the resume's claimFor finds the event claimed for the run.
        const resumed = yield* Support.on(healthy)(Support.resumeAfterLapse(first.run))
        expect(resumed.status._tag).toBe("Succeeded")
        expect(counter.get("wakerelease.act")).toBe(1)
        expect(yield* waitsOf(first.run)).toHaveLength(0)
      }).pipe(Support.on(Support.runtimeOver(faulty.stores, [waiter], { leaseTtlSecs: 1 })), Backend.asFreshTenant)
    })
  })
