/**
 * §7.3 sagas: the unwind of a failed run, last-finished-first, stopped by a Pivot or a mutating
 * Undeclared step, in phase `compensating`, exempt from the budget, and the conclusion of §7.11.
 */

import { describe, it } from "@effect/vitest"
import { Deferred, Effect, FiberId, Option, Schedule, Schema } from "effect"
import { expect } from "vitest"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { StepId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import type { PolicyDenied } from "../../src/errors/PolicyError.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })
type Input = typeof Input.Type

/** A saga's parts: a mutating forward kind, a mutating undo kind that logs what it undid, a failing step. */
const kit = () => {
  const counter = new Support.Counter()
  const undone: Array<string> = []
  const work = Support.counting(counter, "saga.work", { mutates: true })
  const undo = Support.acting("saga.undo", { mutates: true }, (n) =>
    Effect.sync(() => {
      counter.bump("saga.undo")
      return { ok: "undo", n }
    }),
  )
  const read = Support.counting(counter, "saga.read", { mutates: false })
  /** A step doing one mutating `work` whose compensation performs `undo` and logs the step's name. */
  const compensatable = (name: string, n: number, before: Effect.Effect<void> = Effect.void) =>
    Step.make({
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
          yield* before
          return (yield* cx.perform(work, { n })).n
        }),
    })
  const failing = Step.make<Input, number, string | PolicyDenied>({
    name: "fail",
    body: () => Effect.fail("the step gave up"),
  })
  return { counter, undone, work, undo, read, compensatable, failing }
}

const definition = (capability: string, plan: ReadonlyArray<RunDefinition.PlanEntry>, budget?: Run.Budget) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Unknown,
    plan,
    ...(budget === undefined ? {} : { budget }),
  })

/** The names of a run's forward steps in the order their `StepFinished` was journaled. */
const finishOrder = (records: ReadonlyArray<import("../../src/domain/Journal.js").Record>, def: RunDefinition.Any) =>
  Support.recordsOfKind(records, "StepFinished")
    .filter((r) => r.phase === "forward" && r.kind.outcome === "succeeded")
    .map((r) => (def.steps[r.step] as Step.Any).name)

const run = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))

export const suite = (backend: Backend.Backend) =>
  describe("sagas", () => {
    describe("reverse completion order", () => {
      /** Members a, b, c of one group finish c, then b, then a (or the reverse, per `order`). */
      const forcedGroup = (k: ReturnType<typeof kit>, order: { current: "cba" | "abc" }) => {
        const gates = {
          a: Deferred.unsafeMake<void>(FiberId.none),
          b: Deferred.unsafeMake<void>(FiberId.none),
          c: Deferred.unsafeMake<void>(FiberId.none),
        }
        const reset = () => {
          gates.a = Deferred.unsafeMake<void>(FiberId.none)
          gates.b = Deferred.unsafeMake<void>(FiberId.none)
          gates.c = Deferred.unsafeMake<void>(FiberId.none)
        }
        // Each member waits for its predecessor's finish, then a little longer so the
        // predecessor's StepFinished is staged first; the order is forced, never asserted on time.
        const after = (name: "a" | "b" | "c") =>
          Effect.gen(function* () {
            const prev = order.current === "cba" ? { a: "b", b: "c", c: undefined } : { a: undefined, b: "a", c: "b" }
            const p = prev[name] as "a" | "b" | "c" | undefined
            if (p !== undefined) {
              yield* Deferred.await(gates[p])
              yield* Effect.sleep("30 millis")
            }
          })
        const member = (name: "a" | "b" | "c", n: number) => {
          const step = k.compensatable(name, n, after(name))
          return Step.make({
            name,
            role: step.role,
            body: (input: Input, prior: Step.Prior) =>
              Effect.ensuring(
                step.body(input, prior),
                Effect.suspend(() => Deferred.succeed(gates[name], undefined)),
              ),
          })
        }
        return { group: [member("a", 1), member("b", 2), member("c", 3)] as const, reset }
      }

      it.live("a failed run undoes its finished steps last-finished-first, not in plan order", () => {
        const k = kit()
        const order = { current: "cba" as const }
        const { group } = forcedGroup(k, order)
        const def = definition("saga.reverse", [group, k.failing])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          const records = yield* Support.journalOf(result.run)
          expect(finishOrder(records, def)).toEqual(["c", "b", "a"])
          expect(Support.compensatedSteps(records)).toEqual(["a", "b", "c"])
          expect(k.undone).toEqual(["a", "b", "c"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("after a crash, Resume unwinds in the journal's completion order, not its replay's", () => {
        const k = kit()
        const order: { current: "cba" | "abc" } = { current: "cba" }
        const { group, reset } = forcedGroup(k, order)
        const boom = Support.counting(k.counter, "saga.boom", { mutates: true, recovery: Run.Recovery.Retry() })
        const failing = Step.make<Input, number, string | PolicyDenied>({
          name: "fail",
          body: () =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.perform(boom, { n: 9 })
              return yield* Effect.fail("the step gave up")
            }),
        })
        const def = definition("saga.reverse-resume", [group, failing])
        return Effect.gen(function* () {
          const crashed = yield* run(def).pipe(
            Support.on(
              Support.runtime(backend, [def], {
                leaseTtlSecs: 1,
                crash: (p, kind) => p === "after_announce" && kind === "saga.boom",
              }),
            ),
            Effect.flip,
          )
          expect(crashed._tag).toBe("Crashed")
          const id = (crashed as Runtime.Crashed).run
          expect(k.undone).toEqual([])
          // The fresh process replays the group in the opposite order.
          order.current = "abc"
          reset()
          // The crashed owner's lease is left live, as a dead process leaves it, until it lapses.
          const resumed = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(id)).pipe(
            Effect.retry({ while: (e) => e._tag === "LeaseHeld", schedule: Schedule.spaced("100 millis"), times: 50 }),
            Support.on(Support.runtime(backend, [def])),
          )
          expect(resumed.status._tag).toBe("Failed")
          const records = yield* Support.journalOf(id).pipe(Support.on(Support.runtime(backend, [def])))
          expect(finishOrder(records, def)).toEqual(["c", "b", "a"])
          expect(Support.compensatedSteps(records)).toEqual(["a", "b", "c"])
          expect(k.undone).toEqual(["a", "b", "c"])
          expect(k.counter.get("saga.work")).toBe(3)
        }).pipe(Backend.asFreshTenant)
      })
    })

    describe("roles", () => {
      it.live("a Pivot and every step finished before it stay; only what came after is undone", () => {
        const k = kit()
        const pivot = Step.make({
          name: "pivot",
          role: Step.Pivot,
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.work, { n: 2 })),
        })
        const def = definition("saga.pivot", [
          k.compensatable("before", 1),
          pivot,
          k.compensatable("after", 3),
          k.failing,
        ])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          const records = yield* Support.journalOf(result.run)
          expect(Support.compensatedSteps(records)).toEqual(["after"])
          expect(k.undone).toEqual(["after"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("an Unnecessary step is skipped, even one that mutated", () => {
        const k = kit()
        const unnecessary = Step.make({
          name: "unnecessary",
          role: Step.Unnecessary,
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.work, { n: 2 })),
        })
        const def = definition("saga.unnecessary", [k.compensatable("first", 1), unnecessary, k.failing])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          expect(Support.compensatedSteps(yield* Support.journalOf(result.run))).toEqual(["first"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("an Undeclared step whose journal shows no mutating effect is skipped", () => {
        const k = kit()
        const reading = Step.make({
          name: "reading",
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.read, { n: 2 })),
        })
        const def = definition("saga.undeclared-pure", [k.compensatable("first", 1), reading, k.failing])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          expect(Support.compensatedSteps(yield* Support.journalOf(result.run))).toEqual(["first"])
          expect(yield* Support.concludedAs(result.run, "compensated")).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("an Undeclared step with a mutating effect stops the unwind there and quarantines the run", () => {
        const k = kit()
        const mutating = Step.make({
          name: "mutating",
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.work, { n: 2 })),
        })
        const def = definition("saga.undeclared-mutating", [
          k.compensatable("first", 1),
          mutating,
          k.compensatable("third", 3),
          k.failing,
        ])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Quarantined")
          const records = yield* Support.journalOf(result.run)
          expect(Support.compensatedSteps(records)).toEqual(["third"])
          expect(k.undone).toEqual(["third"])
          expect(yield* Support.concludedAs(result.run, "quarantined")).toBe(true)
          const resumed = yield* Effect.flip(Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(result.run)))
          expect(resumed._tag).toBe("RunClosed")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("compensating phase", () => {
      it.live("a compensating effect carries phase compensating in its key and in its records", () => {
        const k = kit()
        const def = definition("saga.phase", [k.compensatable("first", 1), k.failing])
        return Effect.gen(function* () {
          const result = yield* run(def)
          const records = yield* Support.journalOf(result.run)
          const undo = Support.recordsOfKind(records, "EffectStarted").filter(
            (r) => (r.kind.descriptor as { readonly kind: string }).kind === "saga.undo",
          )
          expect(undo.map((r) => r.phase)).toEqual(["compensating"])
          const key = Option.getOrThrow(undo[0]?.effectKey ?? Option.none())
          const derived = (phase: "forward" | "compensating") =>
            EffectKey.derive({ step: StepId.make(0), phase, ordinal: 0, attempt: 1, kind: "saga.undo", args: { n: 1 } })
          expect(key).toBe(derived("compensating"))
          expect(key).not.toBe(derived("forward"))
          const outcome = records.filter(
            (r) => Option.getOrUndefined(r.effectKey) === key && r.kind.kind === "EffectDone",
          )
          expect(outcome.map((r) => r.phase)).toEqual(["compensating"])
          const compensated = Support.recordsOfKind(records, "StepCompensated")
          expect(compensated.map((r) => r.phase)).toEqual(["compensating"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("compensation is exempt from the budget: a run at its effects ceiling still compensates", () => {
        const k = kit()
        const spending = Step.make<Input, number, string | PolicyDenied>({
          name: "spending",
          body: () =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.perform(k.read, { n: 2 })
              return yield* Effect.fail("failed at the ceiling")
            }),
        })
        const def = definition(
          "saga.budget",
          [k.compensatable("first", 1), spending],
          Run.budget({ maxEffects: 2, maxSteps: 2 }),
        )
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          const records = yield* Support.journalOf(result.run)
          expect(Support.recordsOfKind(records, "BudgetRefused")).toEqual([])
          expect(Support.compensatedSteps(records)).toEqual(["first"])
          expect(k.counter.get("saga.undo")).toBe(1)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("failed compensation", () => {
      it.live("a failed compensation quarantines the run half-unwound", () => {
        const k = kit()
        const brittle = Step.make({
          name: "brittle",
          role: Step.compensatable(() => Effect.fail("the undo was refused")),
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.work, { n: 2 })),
        })
        const def = definition("saga.half", [
          k.compensatable("first", 1),
          brittle,
          k.compensatable("third", 3),
          k.failing,
        ])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Quarantined")
          const records = yield* Support.journalOf(result.run)
          expect(
            Support.recordsOfKind(records, "StepCompensated").map((r) => [
              (r.kind.compensation as { readonly name: string }).name,
              r.kind.outcome,
            ]),
          ).toEqual([
            ["third", "compensated"],
            ["brittle", "failed"],
          ])
          expect(k.undone).toEqual(["third"])
          expect(yield* Support.concludedAs(result.run, "quarantined")).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("conclusion", () => {
      it.live("a failed run that compensated a step concludes compensated, sealed and closed to resume", () => {
        const k = kit()
        const def = definition("saga.compensated", [k.compensatable("first", 1), k.failing])
        return Effect.gen(function* () {
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          expect(yield* Support.concludedAs(result.run, "compensated")).toBe(true)
          const sealed = Support.recordsOfKind(yield* Support.journalOf(result.run), "RunSealed")
          expect(sealed.map((r) => r.kind.outcome)).toEqual(["compensated"])
          const resumed = yield* Effect.flip(Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(result.run)))
          expect(resumed._tag).toBe("RunClosed")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a failed run that compensated nothing concludes failed and stays open for resume", () => {
        const k = kit()
        const reading = Step.make({
          name: "reading",
          role: Step.Unnecessary,
          body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(k.read, { n: 1 })),
        })
        const def = definition("saga.failed", [reading, k.failing])
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const result = yield* run(def)
          expect(result.status._tag).toBe("Failed")
          expect(yield* Support.concludedAs(result.run, "failed")).toBe(true)
          const again = yield* rt.resume(result.run)
          expect(again.status._tag).toBe("Failed")
          // The resume replayed the read instead of performing it again.
          expect(k.counter.get("saga.read")).toBe(1)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })
  })
