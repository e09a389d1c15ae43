/**
 * §7.13 runs pinned to their definition's version: an instance that registers another version
 * of a run's definition leaves the run alone (resume, a delivery's wake-up and the sweep's
 * recovery write nothing and act nothing) and says so (`UnknownVersion`, the
 * `agentplane.runs.unknown_version` counter, the sweep report); an instance with the version
 * goes on with the run.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Metric, Option, Schema } from "effect"
import { expect } from "vitest"
import * as Canonical from "../../src/domain/Canonical.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import { generateRunId, type RunId, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as Observability from "../../src/runtime/Observability.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const key = (order: string) => CorrelationKey.make("order", order)

/** Waits for `pinned.paid`, then acts once; the code is the same in every version, only the declared version differs. */
const definition = (counter: Support.Counter, version: string) => {
  const act = Support.counting(counter, "pinned.act", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "pinned.wait",
    version,
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "wait",
        role: Step.Unnecessary,
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("paid", Deadline.days(3))
            yield* cx.awaitEvent({ kind: "pinned.paid", correlation: [key(input.order)], deadline: "paid" })
            return (yield* cx.perform(act, { n: 1 })).n
          }),
      }),
    ],
  })
}

/** Acts once; no wait. */
const acting = (counter: Support.Counter, version: string) => {
  const once = Support.counting(counter, "pinned.once", { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: "pinned.act",
    version,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "act",
        role: Step.Unnecessary,
        body: () => Effect.flatMap(StepCtx, (cx) => Effect.map(cx.perform(once, { n: 1 }), (a) => a.n)),
      }),
    ],
  })
}

/** A run's opening records as a build before versions wrote them: `RunAdmitted` without the definition's version or digest. */
const admittedByAnOldBuild = (def: RunDefinition.Any) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const run = generateRunId()
    const lease = yield* journal.acquire(run, "old-build", 30)
    const at = { case: Option.none(), step: StepId.make(0), phase: "forward" as const, effectKey: Option.none() }
    yield* journal.append(run, lease.epoch, [
      Journal.built({
        ...at,
        kind: {
          kind: "RunAdmitted",
          capability: def.capability,
          input: { n: 1 },
          input_label: "test",
          policy_bundle: PolicyEngine.allowAllEngine.bundle.digest,
          canon: Canonical.CANON_VERSION,
        },
      }),
      Journal.built({ ...at, kind: { kind: "PlanFrozen", steps: def.steps.length, plan: RunDefinition.frozen(def) } }),
    ])
    yield* journal.releaseLease(run, lease.epoch)
    return run
  })

const paid = (order: string) =>
  new InboundEvent({ source: "psp", id: `paid-${order}`, kind: "pinned.paid", correlation: [key(order)], payload: {} })

const unknownCount = Metric.value(Observability.unknownVersions).pipe(Effect.map((s) => s.count))

const nowSecs = Effect.map(
  Effect.clockWith((c) => c.currentTimeMillis),
  (ms) => Timestamp.make(Math.floor(ms / 1000)),
)

export const suite = (backend: Backend.Backend) =>
  describe("runs pinned to their definition's version (§7.13)", () => {
    const length = (run: RunId) =>
      Effect.map(Effect.provide(Support.journalOf(run), backend.layer), (records) => records.length)

    it.live("another version leaves a waiting run alone on resume and on a delivery; its own version goes on", () => {
      const counter = new Support.Counter()
      const order = `o-${crypto.randomUUID()}`
      const v1 = definition(counter, "1")
      const v2 = definition(counter, "2")
      return Effect.gen(function* () {
        const first = yield* Support.on(Support.runtime(backend, [v1]))(
          Effect.flatMap(Runtime.Runtime, (rt) =>
            rt.runCorrelated(v1, Run.labeled({ order }, "test"), "order", [key(order)]),
          ),
        )
        expect(first.status._tag).toBe("Suspended")
        const before = yield* length(first.run)
        const counted = yield* unknownCount
        yield* Support.on(Support.runtime(backend, [v2]))(
          Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const refused = yield* Effect.flip(rt.resume(first.run))
            expect(refused._tag).toBe("UnknownVersion")
            expect(refused.message).toContain('pinned.wait version "1"; this instance registers version "2"')
            // A delivery claims the event for the run and leaves the run as it was.
            yield* rt.deliver(paid(order))
            yield* rt.idle
          }),
        )
        expect(yield* length(first.run)).toBe(before)
        expect(counter.get("pinned.act")).toBe(0)
        expect((yield* unknownCount) - counted).toBeGreaterThanOrEqual(2)
        // The instance that registers version 1 answers the claimed event and finishes the run.
        const redelivered = yield* Support.on(Support.runtime(backend, [v1]))(
          Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const n = yield* rt.redeliverClaimed(10)
            yield* rt.idle
            return n
          }),
        )
        expect(redelivered).toBe(1)
        expect(counter.get("pinned.act")).toBe(1)
        expect(yield* Effect.provide(Support.concludedAs(first.run, "succeeded"), backend.layer)).toBe(true)
      }).pipe(Backend.asFreshTenant)
    })

    it.live(
      "a run admitted before versions were recorded is of the default version: resumed by it, refused by another",
      () => {
        const counter = new Support.Counter()
        const v1 = acting(counter, RunDefinition.DEFAULT_VERSION)
        const v2 = acting(counter, "2")
        return Effect.gen(function* () {
          const run = yield* Effect.provide(admittedByAnOldBuild(v1), backend.layer)
          const refused = yield* Effect.flip(
            Support.on(Support.runtime(backend, [v2]))(Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run))),
          )
          expect(refused._tag).toBe("UnknownVersion")
          expect(counter.get("pinned.once")).toBe(0)
          const resumed = yield* Support.on(Support.runtime(backend, [v1]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run)),
          )
          expect(resumed.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(counter.get("pinned.once")).toBe(1)
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live(
      "the sweep counts an abandoned run of another version as unknownVersions, not a failure, and leaves it for its own version",
      () => {
        const counter = new Support.Counter()
        const order = `o-${crypto.randomUUID()}`
        const v1 = definition(counter, "1")
        const v2 = definition(counter, "2")
        return Effect.gen(function* () {
          // Its owner dies after its first act (the clock read): an abandoned run, once the lease lapses.
          const crashed = yield* Effect.flip(
            Effect.flatMap(Runtime.Runtime, (rt) =>
              rt.runCorrelated(v1, Run.labeled({ order }, "test"), "order", [key(order)]),
            ).pipe(
              Support.on(
                Support.runtime(backend, [v1], {
                  leaseTtlSecs: 1,
                  crash: TestRuntime.crashAt("after_record", "clock.now"),
                }),
              ),
            ),
          )
          expect(crashed._tag).toBe("Crashed")
          const run = (crashed as Runtime.Crashed).run
          yield* Effect.sleep("2100 millis")
          const before = yield* length(run)
          const other = yield* Sweeper.sweep(yield* nowSecs).pipe(Support.on(Support.runtime(backend, [v2])))
          expect([other.unknownVersions, other.recoveryFailures, other.runsRecovered]).toEqual([1, 0, 0])
          expect(Sweeper.needsAttention(other)).toBe(true)
          expect(yield* length(run)).toBe(before)
          const own = yield* Sweeper.sweep(yield* nowSecs).pipe(Support.on(Support.runtime(backend, [v1])))
          expect([own.unknownVersions, own.runsRecovered]).toEqual([0, 1])
          expect(yield* length(run)).toBeGreaterThan(before)
        }).pipe(Backend.asFreshTenant)
      },
    )
  })
