/**
 * §7.6, §7.8, §7.9 (first part): a run waits for an event or a moment, suspends, and is resumed
 * exactly once by whatever answers it; an event that came first is found by the wait.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import * as Run from "../../src/domain/Run.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ order: Schema.String })
type Input = typeof Input.Type

const key = (order: string) => CorrelationKey.make("order", order)

const paid = (counter: Support.Counter) => {
  const ship = Support.counting(counter, "waits.ship", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "waits.await",
    input: Input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait-for-payment",
        body: (input: Input) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("payment", Deadline.days(3))
            const got = yield* cx.awaitEvent({
              kind: "payment.captured",
              correlation: [key(input.order)],
              deadline: "payment",
            })
            const shipped = yield* cx.perform(ship, { n: 1 })
            return { got, shipped }
          }),
      }),
    ],
  })
}

const event = (order: string, id: string) =>
  new InboundEvent({ source: "psp", id, kind: "payment.captured", correlation: [key(order)], payload: { amount: 40 } })

const sleeper = (counter: Support.Counter) =>
  Support.sleepThenAct(
    "waits.sleep",
    Support.counting(counter, "waits.after-sleep", { mutates: true, recovery: Run.Recovery.Retry() }),
    Input,
    () => 2,
  )

export const suite = (backend: Backend.Backend) =>
  describe("waits", () => {
    it.live(
      "a wait that misses suspends, releases lease and quota slot, and a delivery resumes it exactly once",
      () => {
        const counter = new Support.Counter()
        const def = paid(counter)
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(first.status._tag).toBe("Suspended")
          expect(counter.get("waits.ship")).toBe(0)
          const journal = yield* JournalStore
          const kinds = (yield* journal.read(first.run, 1)).map((r) => r.kind.kind)
          expect(kinds[kinds.length - 1]).toBe("RunSuspended")
          // Suspension releases the lease (anyone may resume) and the quota slot.
          const lease = yield* journal.acquire(first.run, "probe", 1)
          yield* journal.releaseLease(first.run, lease.epoch)
          expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
          expect((yield* Effect.flatMap(EventStore, (e) => e.waiting(100))).some((s) => s.run === first.run)).toBe(true)

          const delivered = yield* rt.deliver(event(order, "pay-1"))
          expect(delivered).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
          yield* rt.idle
          expect(counter.get("waits.ship")).toBe(1)
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          // The same event again is a duplicate and wakes nothing.
          expect(yield* rt.deliver(event(order, "pay-1"))).toEqual(Runtime.Delivered.Duplicate())
          yield* rt.idle
          expect(counter.get("waits.ship")).toBe(1)
          expect((yield* Effect.flatMap(EventStore, (e) => e.waiting(100))).some((s) => s.run === first.run)).toBe(
            false,
          )
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("an event that arrived before the wait is found by it, and the run never suspends", () => {
      const counter = new Support.Counter()
      const def = paid(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        expect(yield* rt.deliver(event(order, "early"))).toEqual(Runtime.Delivered.Buffered())
        const result = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        expect(result.status._tag).toBe("Succeeded")
        const output = Option.getOrThrow(result.output) as {
          readonly got: { readonly payload: unknown; readonly provenance: string }
        }
        expect(output.got.payload).toEqual({ amount: 40 })
        expect(output.got.provenance).toBe("event:payment.captured")
        expect(counter.get("waits.ship")).toBe(1)
        const kinds = (yield* Effect.flatMap(JournalStore, (j) => j.read(result.run, 1))).map((r) => r.kind.kind)
        expect(kinds).not.toContain("RunSuspended")
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live(
      "a wait without keys, without a case or naming no registered deadline is refused as a plan contract",
      () => {
        const def = RunDefinition.make({
          capability: "waits.refused",
          input: Input,
          output: Schema.Unknown,
          plan: [
            Step.make({
              name: "bad-wait",
              body: (input: Input) =>
                Effect.flatMap(StepCtx, (cx) =>
                  cx.awaitEvent({ kind: "x", correlation: [key(input.order)], deadline: "never-registered" }),
                ),
            }),
          ],
        })
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const order = `o-${Math.random()}`
          const inCase = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
          expect(inCase.status._tag).toBe("Failed")
          expect(inCase.status._tag === "Failed" && inCase.status.message).toContain("not registered")
          const noCase = yield* rt.run(def, Run.labeled({ order }, "test"))
          expect(noCase.status._tag === "Failed" && noCase.status.message).toContain("needs a case")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("a sleep arms a timer and suspends; firing it records the due instant and resumes the run once", () => {
      const counter = new Support.Counter()
      const def = sleeper(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.run(def, Run.labeled({ order: "x" }, "test"))
        expect(first.status._tag).toBe("Suspended")
        expect(first.status._tag === "Suspended" && first.status.reason.reason).toBe("awaiting_time")
        const pending = yield* Effect.flatMap(TimerStore, (t) => t.pending(100))
        const timer = pending.find((t) => t.run === first.run)
        expect(timer).toBeDefined()
        const fired = yield* rt.fireTimers(128)
        expect(fired.fired).toBeGreaterThanOrEqual(1)
        yield* rt.idle
        expect(counter.get("waits.after-sleep")).toBe(1)
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        const records = yield* Effect.flatMap(JournalStore, (j) => j.read(first.run, 1))
        const done = records.find(
          (r) => r.kind.kind === "EffectDone" && Option.isSome(r.effectKey) && r.effectKey.value === timer?.effect,
        )
        expect(done?.kind.kind === "EffectDone" && done.kind.output).toEqual({ fired_at: timer?.fireAt })
        // The woken run replayed its step's start; it wrote no boundary a second time (the positional rule).
        const unkeyed = records
          .filter((r) => Option.isNone(r.effectKey))
          .map((r) => `${r.step}/${r.phase}/${r.kind.kind}`)
        expect(unkeyed).toContain("0/forward/StepStarted")
        expect(new Set(unkeyed).size).toBe(unkeyed.length)
        // Firing again finds nothing: the timer was disarmed, and the run is not woken twice.
        yield* rt.fireTimers(128)
        yield* rt.idle
        expect(counter.get("waits.after-sleep")).toBe(1)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("cx.sleep answers the journaled due instant, late sweep or not, and a replay answers the same", () => {
      const def = RunDefinition.make({
        capability: "waits.fired-at",
        input: Schema.Struct({ n: Schema.Number }),
        output: Schema.Number,
        plan: [
          Step.make({
            name: "sleep",
            body: () =>
              Effect.map(
                Effect.flatMap(StepCtx, (cx) => cx.sleep(0)),
                (fired) => fired.firedAt,
              ),
          }),
        ],
      })
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
        const timer = (yield* Effect.flatMap(TimerStore, (t) => t.pending(100))).find((t) => t.run === first.run)
        // A sweep a minute late still answers the due instant, not the moment it noticed.
        const clock = yield* Effect.clock
        yield* Effect.withClock(rt.fireTimers(128), Support.clockAhead(clock, 60))
        yield* rt.idle
        const records = yield* Support.journalOf(first.run)
        const sealed = records.at(-1)
        expect(sealed?.kind.kind === "RunSealed" && sealed.kind.outcome).toBe("succeeded")
        const replayed = yield* rt.replay(first.run)
        expect(replayed.status).toEqual(Run.RunStatus.Succeeded({ output: timer?.fireAt }))
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("Strict replay of a suspended run reproduces the suspension and writes nothing", () => {
      const counter = new Support.Counter()
      const def = paid(counter)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const order = `o-${Math.random()}`
        const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)])
        const journal = yield* JournalStore
        const before = (yield* journal.head(first.run)).seq
        const report = yield* rt.replay(first.run)
        expect(report.status._tag).toBe("Suspended")
        expect((yield* journal.head(first.run)).seq).toBe(before)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
