/**
 * Issue 16 B, PostgreSQL only (the cut is a trigger that terminates the backend; see
 * test/support/Faults.ts): the connection dies inside the COMMIT of a suspending run's
 * subscription. The live process gets `Backend` with the wait announced and no wait row; had it
 * released the lease, no pass would find the run (recovery walks lapsed leases, redelivery walks
 * waits) and the event would stay buffered. The lease is left to lapse instead, so the recovery
 * pass resumes the run, whose wait subscribes again and claims the event: sealed once, every
 * effect with one outcome, the act performed once.
 */
import { describe, layer } from "@effect/vitest"
import { Clock, Effect, Layer, Option, Schedule, Schema } from "effect"
import { expect, inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { asFreshTenant } from "../support/Backend.js"
import * as Faults from "../support/Faults.js"
import * as Support from "./Support.js"

const key = (order: string) => CorrelationKey.make("order", order)

const paid = (order: string) =>
  new InboundEvent({ source: "psp", id: `paid-${order}`, kind: "fault.paid", correlation: [key(order)], payload: {} })

const bounded = () =>
  new Quota.TenantQuota({
    maxConcurrentRuns: Option.some(10),
    maxTokensPerPeriod: Option.none(),
    maxMinorUnitsPerPeriod: Option.none(),
    period: "monthly",
  })

/** Waits for the payment, then acts once (counted outside the journal). */
const definition = (counter: Support.Counter) => {
  const act = Support.counting(counter, "fault.act", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "fault.suspend",
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "wait",
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("paid", Deadline.days(3))
            yield* cx.awaitEvent({ kind: "fault.paid", correlation: [key(input.order)], deadline: "paid" })
            return (yield* cx.perform(act, { n: 1 })).n
          }),
      }),
    ],
  })
}

/** The client retries its delivery and the sweeper ticks until the run is sealed. */
const recover = (run: RunId, order: string) =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    yield* Effect.ignore(rt.deliver(paid(order)))
    yield* rt.idle
    const now = Timestamp.make(Math.floor((yield* Clock.currentTimeMillis) / 1000))
    yield* Effect.ignore(Sweeper.sweep(now))
    yield* rt.idle
    if (!(yield* Support.concludedAs(run, "succeeded"))) return yield* Effect.fail("not sealed yet")
  }).pipe(Effect.retry(Schedule.spaced("250 millis").pipe(Schedule.upTo("20 seconds"))), Effect.orDie)

const stranded = (killer: Faults.Killer) =>
  Effect.gen(function* () {
    const counter = new Support.Counter()
    const def = definition(counter)
    const order = `o-${Math.random()}`
    const stores = Layer.succeedContext(yield* Effect.context<Faults.Services>())
    const live = Support.runtimeOver(stores, [def], { quota: bounded, leaseTtlSecs: 1 })
    const start = Effect.flatMap(Runtime.Runtime, (rt) =>
      rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [key(order)]),
    )
    yield* Faults.inject(Faults.atCommit("subscriptions", "INSERT"), killer, Support.on(live)(start))
    const kase = yield* Effect.flatMap(CaseStore, (c) => c.correlate([key(order)]))
    const found = yield* Effect.flatMap(CaseStore, (c) => c.case(Option.getOrThrow(kase)))
    const [run] = Option.getOrThrow(found).runs
    if (run === undefined) return expect.fail("the run was not attached to its case")
    // The stranded state: the wait announced, its subscription lost, the run not sealed.
    const waits = Effect.map(
      Effect.flatMap(EventStore, (e) => e.waiting(10_000)),
      (subs) => subs.filter((s) => s.run === run),
    )
    expect(yield* waits).toEqual([])
    expect(yield* Support.concludedAs(run, "succeeded")).toBe(false)
    // The event arrives while no wait exists (buffered); the sweeper recovers the run.
    yield* Support.on(Support.runtimeOver(stores, [def], { quota: bounded, leaseTtlSecs: 5 }))(recover(run, order))
    expect(counter.get("fault.act")).toBe(1)
    const records = yield* Support.journalOf(run)
    // Every announced effect (the wait's included) has exactly one outcome.
    const started = Support.ofKind(records, "EffectStarted").map((s) => Option.getOrThrow(s.record.effectKey))
    expect(new Set(started).size).toBe(started.length)
    for (const k of started) {
      const outcomes = records.filter((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, k))
      expect(outcomes.map((r) => r.kind.kind)).toEqual(["EffectDone"])
    }
    expect(Support.ofKind(records, "RunSealed").map((s) => s.kind.outcome)).toEqual(["succeeded"])
    expect(yield* waits).toEqual([])
    expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
  })

describe("Runtime on PostgreSQL: a store failure mid-suspend", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    for (const killer of Faults.killers) {
      it.effect(`killed (${killer}) in the subscription's COMMIT: the lease lapses, recovery resumes it once`, () =>
        asFreshTenant(stranded(killer)),
      )
    }
  })
})
