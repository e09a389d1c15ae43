/**
 * A wake-up's answer rides with the woken run's first commit (§7.9, §7.10 pass 5): no commit of
 * its own, the timer disarmed only once the answer is durable, and an answer whose commit failed
 * leaves the lease to lapse and the timer armed, so a later firing still wakes the run once.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Schedule, Schema } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const sleeper = (counter: Support.Counter) =>
  Support.sleepThenAct(
    "wakecommit.sleep",
    Support.counting(counter, "wakecommit.after", { mutates: true, recovery: Run.Recovery.Retry() }),
    Schema.Struct({ n: Schema.Number }),
  )

const isFired = (output: unknown) => typeof output === "object" && output !== null && "fired_at" in output

/** The journal with its first append carrying a timer's answer failing once, as a lost connection would. */
const failingFirstAnswer = (base: Layer.Layer<Backend.Stores, BackendError>) => {
  let failed = 0
  const journal = Layer.effect(
    JournalStore,
    Effect.map(JournalStore, (j) =>
      JournalStore.of({
        ...j,
        append: (run, epoch, batch, alongside, options) =>
          failed === 0 && batch.some((a) => a.kind.kind === "EffectDone" && isFired(a.kind.output))
            ? Effect.suspend(() => {
                failed += 1
                return Effect.fail(new BackendError({ detail: "injected: the answer's commit was lost" }))
              })
            : j.append(run, epoch, batch, alongside, options),
      }),
    ),
  ).pipe(Layer.provide(base))
  return { stores: Layer.merge(base, journal), failed: () => failed }
}

/** The journal, recording the batches appended (and sealed) per run. */
const recording = (base: Layer.Layer<Backend.Stores, BackendError>) => {
  const batches: Array<{ readonly run: string; readonly kinds: ReadonlyArray<string>; readonly seal: boolean }> = []
  const journal = Layer.effect(
    JournalStore,
    Effect.map(JournalStore, (j) =>
      JournalStore.of({
        ...j,
        append: (run, epoch, batch, alongside, options) =>
          Effect.zipRight(
            Effect.sync(() => batches.push({ run, kinds: batch.map((a) => a.kind.kind), seal: false })),
            j.append(run, epoch, batch, alongside, options),
          ),
        seal: (run, epoch, outcome, last, alongside, options) =>
          Effect.zipRight(
            Effect.sync(() => batches.push({ run, kinds: (last ?? []).map((a) => a.kind.kind), seal: true })),
            j.seal(run, epoch, outcome, last, alongside, options),
          ),
      }),
    ),
  ).pipe(Layer.provide(base))
  return { stores: Layer.merge(base, journal), batches }
}

/** The journal, counting lease calls: `acquire` one by one, `acquireMany` per batch. */
const countingLeases = (base: Layer.Layer<Backend.Stores, BackendError>) => {
  const calls = { acquire: 0, acquireMany: 0 }
  const journal = Layer.effect(
    JournalStore,
    Effect.map(JournalStore, (j) =>
      JournalStore.of({
        ...j,
        acquire: (run, owner, ttl) =>
          Effect.zipRight(
            Effect.sync(() => (calls.acquire += 1)),
            j.acquire(run, owner, ttl),
          ),
        acquireMany: (runs, owner, ttl) =>
          Effect.zipRight(
            Effect.sync(() => (calls.acquireMany += 1)),
            j.acquireMany(runs, owner, ttl),
          ),
      }),
    ),
  ).pipe(Layer.provide(base))
  return { stores: Layer.merge(base, journal), calls }
}

export const suite = (backend: Backend.Backend) =>
  describe("wake-up commits", () => {
    it.live("a fired timer's answer costs no commit: it rides in one batch with the act's announcement", () => {
      const counter = new Support.Counter()
      const def = sleeper(counter)
      const rec = recording(backend.layer)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
        expect(first.status._tag).toBe("Suspended")
        const from = rec.batches.length
        const fired = yield* rt.fireTimers(128)
        expect(fired.fired).toBeGreaterThanOrEqual(1)
        yield* rt.idle
        expect(counter.get("wakecommit.after")).toBe(1)
        // Two journal commits for the whole wake-up: answer + announcement, then outcome + seal.
        const mine = rec.batches.slice(from).filter((x) => x.run === first.run)
        expect(mine.map((x) => x.seal)).toEqual([false, true])
        expect(mine[0]?.kinds[0]).toBe("EffectDone")
        expect(mine[0]?.kinds).toContain("EffectStarted")
        const records = yield* Support.journalOf(first.run)
        expect(records.filter((r) => r.kind.kind === "EffectDone" && isFired(r.kind.output)).length).toBe(1)
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        // Disarmed once the answer was durable.
        const pending = yield* Effect.flatMap(TimerStore, (t) => t.pending(1000))
        expect(pending.some((t) => t.run === first.run)).toBe(false)
      }).pipe(Support.on(Support.runtimeOver(rec.stores, [def])), Backend.asFreshTenant)
    })

    it.live("a timer pass takes its batch's leases in one call: no wake-up of it acquires its own", () => {
      const counter = new Support.Counter()
      const def = sleeper(counter)
      const counted = countingLeases(backend.layer)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const runs = yield* Effect.forEach([1, 2, 3], (n) => rt.run(def, Run.labeled({ n }, "test")))
        for (const r of runs) expect(r.status._tag).toBe("Suspended")
        const before = { ...counted.calls }
        const fired = yield* rt.fireTimers(128)
        yield* rt.idle
        expect(fired.fired).toBe(3)
        expect(counted.calls.acquireMany - before.acquireMany).toBe(1)
        expect(counted.calls.acquire - before.acquire).toBe(0)
        expect(counter.get("wakecommit.after")).toBe(3)
        for (const r of runs) expect(yield* Support.concludedAs(r.run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtimeOver(counted.stores, [def])), Backend.asFreshTenant)
    })

    it.live("an answer whose commit fails keeps the timer and the lease; after the lapse the run is woken once", () => {
      const counter = new Support.Counter()
      const def = sleeper(counter)
      const faulty = failingFirstAnswer(backend.layer)
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const journal = yield* JournalStore
        const first = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
        expect(first.status._tag).toBe("Suspended")
        yield* rt.fireTimers(128)
        yield* rt.idle
        expect(faulty.failed()).toBe(1)
        expect(counter.get("wakecommit.after")).toBe(0)
        const kept = yield* Support.journalOf(first.run)
        expect(kept.some((r) => r.kind.kind === "EffectDone" && isFired(r.kind.output))).toBe(false)
        // Not disarmed: the answer never became durable.
        const pending = yield* Effect.flatMap(TimerStore, (t) => t.pending(1000))
        expect(pending.some((t) => t.run === first.run)).toBe(true)
        // Not released either: the lease is left to lapse with its owner on it, so the run turns
        // up among the abandoned for the recovery pass (a released lease never would).
        const abandoned = yield* journal.abandonedRuns(1000).pipe(
          Effect.filterOrFail(
            (runs) => runs.includes(first.run),
            () => "not abandoned yet",
          ),
          Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo("20 seconds"))),
          Effect.either,
        )
        expect(Either.isRight(abandoned)).toBe(true)
        const resumed = yield* Support.resumeAfterLapse(first.run)
        expect(resumed.status._tag).toBe("Suspended")
        // A later sweep, past the timer claim's 60 s, fires it again and the run finishes once.
        const clock = yield* Effect.clock
        const again = yield* Effect.withClock(rt.fireTimers(128), Support.clockAhead(clock, 120))
        expect(again.fired).toBe(1)
        yield* rt.idle
        expect(counter.get("wakecommit.after")).toBe(1)
        expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
        const answers = (yield* Support.journalOf(first.run)).filter(
          (r) => r.kind.kind === "EffectDone" && isFired(r.kind.output),
        )
        expect(answers.length).toBe(1)
      }).pipe(Support.on(Support.runtimeOver(faulty.stores, [def], { leaseTtlSecs: 1 })), Backend.asFreshTenant)
    })
  })
