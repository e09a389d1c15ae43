/**
 * §7.2 run status and sealing (§7.11 outcomes): succeeded, quarantined, cancelled and compensated
 * runs are sealed and closed to resume; failed and exhausted runs stay resumable; the outcome index
 * shows the latest conclusion; among parallel siblings the worst status wins.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Schema } from "effect"
import { expect } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import type * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import type * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })

const plan = (capability: string, steps: ReadonlyArray<RunDefinition.PlanEntry>, budget?: Run.Budget) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Unknown,
    plan: steps,
    ...(budget === undefined ? {} : { budget }),
  })

const step = (name: string, body: Effect.Effect<unknown, unknown, StepCtx>, role?: Step.Role<unknown, never>) =>
  Step.make({ name, body: () => body, ...(role === undefined ? {} : { role }) })

/** A RequiresOperator act that dies mid-call: in doubt, so the run is quarantined. */
const lost = Support.acting("test.status.lost", { mutates: true }, () => Effect.dieMessage("connection reset"))
const perform = <E>(kind: EffectKind.EffectKind<Support.Answer, { readonly n: number }, E, never>, n = 1) =>
  Effect.flatMap(StepCtx, (cx) => cx.perform(kind, { n }))
const read = (counter: Support.Counter, name: string) => Support.counting(counter, name, { mutates: false })

const runOf = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
const resumeOf = (run: RunId) => Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run))
const sealedAs = (records: ReadonlyArray<Journal.Record>) =>
  Support.ofKind(records, "RunSealed").map((s) => s.kind.outcome)

export const suite = (backend: Backend.Backend) =>
  describe("run status", () => {
    describe("sealed and closed to resume", () => {
      const cases: ReadonlyArray<readonly [Journal.RunOutcome, Run.RunStatus["_tag"], () => RunDefinition.Any]> = [
        ["succeeded", "Succeeded", () => plan("status.succeeded", [step("only", Effect.succeed(1))])],
        ["quarantined", "Quarantined", () => plan("status.quarantined", [step("only", perform(lost))])],
        [
          "cancelled",
          "Cancelled",
          () =>
            plan("status.cancelled", [
              step(
                "ask",
                Effect.flatMap(StepCtx, (cx) =>
                  Effect.flatMap(JournalStore, (j) => j.requestCancel(cx.run, "alice", "changed her mind")),
                ) as Effect.Effect<unknown, unknown, StepCtx>,
              ),
              step("never", Effect.dieMessage("ran past a cancellation")),
            ]),
        ],
        [
          "compensated",
          "Failed",
          () =>
            plan("status.compensated", [
              step(
                "undoable",
                Effect.succeed(1),
                Step.compensatable(() => Effect.void),
              ),
              step("fails", Effect.fail("declined")),
            ]),
        ],
      ]
      for (const [outcome, tag, make] of cases) {
        it.live(`a ${outcome} run is sealed, listed ${outcome}, and resume fails with RunClosed`, () => {
          const def = make()
          return Effect.gen(function* () {
            const result = yield* runOf(def)
            expect(result.status._tag).toBe(tag)
            const records = yield* Support.journalOf(result.run)
            expect(sealedAs(records)).toEqual([outcome])
            expect(yield* Support.concludedAs(result.run, outcome)).toBe(true)
            const closed = yield* Effect.flip(resumeOf(result.run))
            expect(closed).toMatchObject({ _tag: "RunClosed", run: result.run, outcome })
            // The store refuses the run too: it is frozen, not only skipped by the runtime.
            const epoch = (yield* Effect.flatMap(JournalStore, (j) => j.acquire(result.run, "probe", 1))).epoch
            const append = yield* Effect.flip(Effect.flatMap(JournalStore, (j) => j.seal(result.run, epoch, "failed")))
            expect(append._tag).toBe("RunSealed")
            expect(yield* Support.journalOf(result.run)).toEqual(records)
          }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
        })
      }
    })

    describe("resumable", () => {
      it.live("a failed run stays open; its resume concludes it anew and the outcome index moves", () => {
        const failing = { value: true }
        const def = plan("status.failed", [
          step(
            "only",
            Effect.suspend(() => (failing.value ? Effect.fail("not yet") : Effect.succeed(1))),
          ),
        ])
        return Effect.gen(function* () {
          const first = yield* runOf(def)
          expect(first.status).toEqual(Run.RunStatus.Failed({ message: "step only: not yet" }))
          expect(yield* Support.concludedAs(first.run, "failed")).toBe(true)
          failing.value = false
          const again = yield* resumeOf(first.run)
          expect(again.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          expect(yield* Support.concludedAs(first.run, "failed")).toBe(false)
          expect(sealedAs(yield* Support.journalOf(first.run))).toEqual(["failed", "succeeded"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("an exhausted run stays open: resume is allowed, and after a raise it concludes", () => {
        const counter = new Support.Counter()
        const a = read(counter, "test.status.a")
        const def = plan(
          "status.exhausted",
          [step("two", Effect.zipRight(perform(a, 1), perform(a, 2)))],
          Run.budget({ maxEffects: 1 }),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* runOf(def)
          expect(first.status).toEqual(Run.RunStatus.Exhausted({ limit: "effects" }))
          expect(yield* Support.concludedAs(first.run, "exhausted")).toBe(true)
          const again = yield* resumeOf(first.run)
          expect(again.status).toEqual(Run.RunStatus.Exhausted({ limit: "effects" }))
          const raised = yield* rt.raiseBudget(first.run, { maxEffects: 5 })
          expect(raised.status._tag).toBe("Succeeded")
          expect(counter.get("test.status.a")).toBe(2)
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          expect(yield* Support.concludedAs(first.run, "exhausted")).toBe(false)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("parallel siblings: the worst wins", () => {
      it.live("one fails, then its sibling is quarantined: Quarantined", () => {
        const failed = Effect.runSync(Deferred.make<void>())
        const def = plan("status.rank.fail-first", [
          [
            step("fails", Effect.zipRight(Deferred.succeed(failed, undefined), Effect.fail("declined"))),
            step("lost", Effect.zipRight(Deferred.await(failed), perform(lost))),
          ],
        ])
        return Effect.gen(function* () {
          const result = yield* runOf(def)
          expect(result.status._tag).toBe("Quarantined")
          expect(sealedAs(yield* Support.journalOf(result.run))).toEqual(["quarantined"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("one is quarantined, then its sibling fails: Quarantined", () => {
        const quarantined = Effect.runSync(Deferred.make<void>())
        const def = plan("status.rank.quarantine-first", [
          [
            step("fails", Effect.zipRight(Deferred.await(quarantined), Effect.fail("declined"))),
            step("lost", perform(lost).pipe(Effect.ensuring(Deferred.succeed(quarantined, undefined)))),
          ],
        ])
        return Effect.gen(function* () {
          const result = yield* runOf(def)
          expect(result.status._tag).toBe("Quarantined")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("one fails, then its sibling is exhausted: Failed", () => {
        const counter = new Support.Counter()
        const a = read(counter, "test.status.rank.a")
        const failed = Effect.runSync(Deferred.make<void>())
        const def = plan(
          "status.rank.fail-exhaust",
          [
            [
              step("fails", Effect.zipRight(Deferred.succeed(failed, undefined), Effect.fail("declined"))),
              step("spends", Effect.zipRight(Deferred.await(failed), Effect.zipRight(perform(a, 1), perform(a, 2)))),
            ],
          ],
          Run.budget({ maxEffects: 1 }),
        )
        return Effect.gen(function* () {
          const result = yield* runOf(def)
          expect(result.status).toEqual(Run.RunStatus.Failed({ message: "step fails: declined" }))
          expect(sealedAs(yield* Support.journalOf(result.run))).toEqual(["failed"])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })
  })
