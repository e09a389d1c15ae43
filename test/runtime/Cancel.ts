/**
 * §7.3 / §7.11 cancellation: `cancel` stores the request (§6.6); the run honours it at its next
 * step boundary with `RunCancelled`, unwinds and is sealed `cancelled`; a request found after
 * the last step is ignored.
 */

import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import type { PolicyDenied } from "../../src/errors/PolicyError.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })

/** What a step here needs beyond its context: the journal, to ask for its own cancellation. */
type Needs = StepCtx | JournalStore | Tenant

const kit = () => {
  const counter = new Support.Counter()
  const undone: Array<string> = []
  const work = Support.counting(counter, "cancel.work", { mutates: true })
  const undo = Support.counting(counter, "cancel.undo", { mutates: true })
  /** A compensatable step doing one `work`; `also` runs after it inside the body. */
  const step = (name: string, n: number, also: Effect.Effect<void, never, Needs> = Effect.void) =>
    Step.make<unknown, number, PolicyDenied, JournalStore | Tenant>({
      name,
      role: Step.compensatable(() =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.perform(undo, { n })
          undone.push(name)
        }),
      ),
      body: () =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          const answer = yield* cx.perform(work, { n })
          yield* also
          return answer.n
        }),
    })
  return { counter, undone, step, work }
}

/** Asks, from inside a step, that the run be cancelled, as an operator would meanwhile. */
const requestCancel = Effect.gen(function* () {
  const cx = yield* StepCtx
  const journal = yield* JournalStore
  yield* Effect.orDie(journal.requestCancel(cx.run, "operator:ann", "customer withdrew"))
})

const definition = (capability: string, plan: ReadonlyArray<RunDefinition.PlanEntry>, budget?: Run.Budget) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Number,
    plan,
    ...(budget === undefined ? {} : { budget }),
  })

const start = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 0 }, "test")))

export const suite = (backend: Backend.Backend) =>
  describe("cancellation", () => {
    it.live("cancel stores the first request (true); later ones change nothing (false)", () => {
      const k = kit()
      const def = definition("cancel.store", [k.step("one", 1), k.step("two", 2)], Run.budget({ maxSteps: 1 }))
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const journal = yield* JournalStore
        const paused = yield* start(def)
        expect(paused.status._tag).toBe("Exhausted")
        expect(yield* rt.cancel(paused.run, "operator:ann", "first")).toBe(true)
        expect(yield* rt.cancel(paused.run, "operator:bob", "second")).toBe(false)
        expect(yield* journal.cancellation(paused.run)).toEqual(Option.some({ actor: "operator:ann", reason: "first" }))
        // Nothing runs until the run reaches a step boundary again.
        expect(Support.recordsOfKind(yield* Support.journalOf(paused.run), "RunCancelled")).toEqual([])
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("cancelling a sealed run fails RunClosed and stores no request", () => {
      const k = kit()
      const def = definition("cancel.sealed", [k.step("one", 1)])
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const journal = yield* JournalStore
        const done = yield* start(def)
        expect(done.status._tag).toBe("Succeeded")
        const refused = yield* Effect.flip(rt.cancel(done.run, "operator:ann", "too late"))
        expect(refused).toMatchObject({ _tag: "RunClosed", run: done.run, outcome: "succeeded" })
        expect(yield* journal.cancellation(done.run)).toEqual(Option.none())
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("a request is honoured at the next step boundary: RunCancelled, unwind, sealed cancelled", () => {
      const k = kit()
      const def = definition("cancel.boundary", [k.step("one", 1), k.step("two", 2, requestCancel), k.step("three", 3)])
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const result = yield* start(def)
        expect(result.status).toEqual(Run.RunStatus.Cancelled({ actor: "operator:ann", reason: "customer withdrew" }))
        // The step that was running finished; the next never started.
        expect(k.counter.get("cancel.work")).toBe(2)
        const records = yield* Support.journalOf(result.run)
        const cancelled = Support.recordsOfKind(records, "RunCancelled")
        expect(cancelled.map((r) => [r.step, r.kind.actor, r.kind.reason])).toEqual([
          [2, "operator:ann", "customer withdrew"],
        ])
        expect(Support.recordsOfKind(records, "StepStarted").map((r) => r.kind.skill)).toEqual(["one", "two"])
        expect(Support.compensatedSteps(records)).toEqual(["two", "one"])
        expect(k.undone).toEqual(["two", "one"])
        const seal = records.findIndex((r) => r.kind.kind === "RunSealed")
        expect(seal).toBeGreaterThan(records.findIndex((r) => r.kind.kind === "RunCancelled"))
        expect(yield* Support.concludedAs(result.run, "cancelled")).toBe(true)
        expect((yield* Effect.flip(rt.resume(result.run)))._tag).toBe("RunClosed")
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live(
      "a request stored before a step's first act is honoured at that step's boundary: the act never happens, and Strict replay reproduces it",
      () => {
        const k = kit()
        // Step two asks for its own cancellation before it acts: its boundary is checked in the
        // commit that would announce its act, not by a read before its body, and that commit is
        // refused, so nothing of step two is journaled but the cancellation standing in its place.
        const asking = Step.make<unknown, number, PolicyDenied, JournalStore | Tenant>({
          name: "two",
          body: () =>
            Effect.gen(function* () {
              yield* requestCancel
              const cx = yield* StepCtx
              return (yield* cx.perform(k.work, { n: 2 })).n
            }),
        })
        const def = definition("cancel.first-act", [k.step("one", 1), asking, k.step("three", 3)])
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const result = yield* start(def)
          expect(result.status).toEqual(Run.RunStatus.Cancelled({ actor: "operator:ann", reason: "customer withdrew" }))
          expect(k.counter.get("cancel.work")).toBe(1)
          const records = yield* Support.journalOf(result.run)
          expect(Support.recordsOfKind(records, "StepStarted").map((r) => r.kind.skill)).toEqual(["one"])
          expect(Support.recordsOfKind(records, "RunCancelled").map((r) => r.step)).toEqual([1])
          expect(k.undone).toEqual(["one"])
          expect(yield* Support.concludedAs(result.run, "cancelled")).toBe(true)
          const replayed = yield* rt.replay(result.run)
          expect(replayed.reproduced).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live(
      "a request found when steps that never committed conclude is honoured at the last of their boundaries",
      () => {
        const k = kit()
        // Pure steps commit nothing until the conclusion, whose commit carries their boundaries:
        // refused there, the run is cancelled at the last one, and what finished before it unwinds.
        const pure = (name: string, body: Effect.Effect<number, never, Needs>) =>
          Step.make<unknown, number, PolicyDenied, JournalStore | Tenant>({
            name,
            role: Step.compensatable(() => Effect.sync(() => k.undone.push(name))),
            body: () => body,
          })
        const def = definition("cancel.pure", [
          k.step("one", 1),
          pure("ask", Effect.as(requestCancel, 0)),
          pure("fails", Effect.dieMessage("ran past a cancellation")),
        ])
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const result = yield* start(def)
          expect(result.status).toEqual(Run.RunStatus.Cancelled({ actor: "operator:ann", reason: "customer withdrew" }))
          const records = yield* Support.journalOf(result.run)
          expect(Support.recordsOfKind(records, "StepStarted").map((r) => r.kind.skill)).toEqual(["one", "ask"])
          expect(Support.recordsOfKind(records, "RunCancelled").map((r) => r.step)).toEqual([2])
          expect(k.undone).toEqual(["ask", "one"])
          expect(yield* Support.concludedAs(result.run, "cancelled")).toBe(true)
          expect((yield* rt.replay(result.run)).reproduced).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      },
    )

    it.live("a paused run cancelled meanwhile honours the request when it resumes", () => {
      const k = kit()
      const def = definition("cancel.paused", [k.step("one", 1), k.step("two", 2)], Run.budget({ maxSteps: 1 }))
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const paused = yield* start(def)
        yield* rt.cancel(paused.run, "operator:ann", "too slow")
        const result = yield* rt.raiseBudget(paused.run, { maxSteps: 5 })
        expect(result.status).toEqual(Run.RunStatus.Cancelled({ actor: "operator:ann", reason: "too slow" }))
        expect(k.counter.get("cancel.work")).toBe(1)
        expect(k.undone).toEqual(["one"])
        expect(yield* Support.concludedAs(paused.run, "cancelled")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    it.live("a request found after the last step has finished is ignored: the run concludes as it would have", () => {
      const k = kit()
      const def = definition("cancel.late", [k.step("one", 1), k.step("last", 2, requestCancel)])
      return Effect.gen(function* () {
        const journal = yield* JournalStore
        const result = yield* start(def)
        expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 2 }))
        expect(Option.isSome(yield* journal.cancellation(result.run))).toBe(true)
        const records = yield* Support.journalOf(result.run)
        expect(Support.recordsOfKind(records, "RunCancelled")).toEqual([])
        expect(k.undone).toEqual([])
        expect(yield* Support.concludedAs(result.run, "succeeded")).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
