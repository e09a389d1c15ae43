/**
 * §7.5 case state, status and deadlines through the step context: each is an effect of a fixed
 * kind, journaled, written to the store in Live and Resume and never by a Strict replay.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as Calendar from "../../src/domain/Calendar.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import type { CaseId, CaseVersion } from "../../src/domain/Ids.js"
import type { Json } from "../../src/domain/Json.js"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })

const oneStep = (capability: string, body: Effect.Effect<Json, unknown, StepCtx | CaseStore | Tenant>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Unknown,
    plan: [Step.make({ name: "only", body: () => body })],
  })

/** Runs `def` bound to a fresh case; answers the result and the case. */
const inCase = (def: RunDefinition.Any, value = "c") =>
  Effect.gen(function* () {
    const rt = yield* Runtime.Runtime
    const result = yield* rt.runCorrelated(def, Run.labeled({ n: 1 }, "test"), "claim", [
      CorrelationKey.make("claim", value),
    ])
    return { result, kase: Option.getOrThrow(result.case) as CaseId }
  })

const descriptorKinds = (records: ReadonlyArray<import("../../src/domain/Journal.js").Record>) =>
  Support.recordsOfKind(records, "EffectStarted").map((r) => (r.kind.descriptor as { readonly kind: string }).kind)

export const suite = (backend: Backend.Backend) =>
  describe("case state, status, deadlines", () => {
    describe("caseState / putCaseState", () => {
      it.live("caseState reads state and version; putCaseState writes at that version and answers the next", () => {
        const def = oneStep(
          "case.write",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const read = yield* cx.caseState
            const version = yield* cx.putCaseState(read.version, { stage: "reviewed" })
            return { read: read.version, wrote: version }
          }),
        )
        return Effect.gen(function* () {
          const { result, kase } = yield* inCase(def)
          const stored = Option.getOrThrow(yield* Effect.flatMap(CaseStore, (c) => c.case(kase)))
          expect(stored.state).toEqual({ stage: "reviewed" })
          const output = Option.getOrThrow(result.output) as { readonly read: number; readonly wrote: number }
          expect(output.wrote).toBe(output.read + 1)
          expect(stored.version).toBe(output.wrote)
          const records = yield* Support.journalOf(result.run)
          expect(descriptorKinds(records)).toEqual(["case.read_state", "case.write_state"])
          const write = Support.recordsOfKind(records, "EffectStarted")[1]
          expect(write?.kind.mutates).toBe(true)
          expect(write?.kind.recovery).toBe("reconcile")
          expect(write?.kind.descriptor).toMatchObject({ args: { case: kase, expected: output.read } })
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a stale version comes back as CaseConflict the step handles: it re-reads and writes again", () => {
        const def = oneStep(
          "case.conflict",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const cases = yield* CaseStore
            const id = Option.getOrThrow(cx.case)
            const read = yield* cx.caseState
            // Another writer moves the case on between the run's read and its write.
            yield* Effect.orDie(cases.putState(id, read.version, { by: "someone else" }))
            const conflict = yield* Effect.flip(cx.putCaseState(read.version, { by: "the run" }))
            const again = yield* cx.caseState
            const version = yield* cx.putCaseState(again.version as CaseVersion, { by: "the run" })
            return { conflict: conflict._tag, seen: again.state, version }
          }),
        )
        return Effect.gen(function* () {
          const { result, kase } = yield* inCase(def)
          expect(result.status._tag).toBe("Succeeded")
          const output = Option.getOrThrow(result.output) as { readonly conflict: string; readonly seen: Json }
          expect(output.conflict).toBe("CaseConflict")
          expect(output.seen).toEqual({ by: "someone else" })
          const stored = Option.getOrThrow(yield* Effect.flatMap(CaseStore, (c) => c.case(kase)))
          expect(stored.state).toEqual({ by: "the run" })
          const records = yield* Support.journalOf(result.run)
          const failures = Support.recordsOfKind(records, "EffectFailed")
          expect(failures.map((r) => [r.kind.permanent, r.kind.disposition])).toEqual([[true, "landed"]])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("setCaseStatus and deadlines", () => {
      it.live(
        "cx.deadline resolves at the journaled clock, registers with warnAt and journals DeadlineRegistered",
        () => {
          const def = oneStep(
            "case.deadline",
            Effect.gen(function* () {
              const cx = yield* StepCtx
              const now = yield* cx.now
              const d = yield* cx.deadline("reply", Deadline.minutes(10), 120)
              return { now, at: d.resolvedAt }
            }),
          )
          return Effect.gen(function* () {
            const { result, kase } = yield* inCase(def)
            const { now, at } = Option.getOrThrow(result.output) as { readonly now: number; readonly at: number }
            const records = yield* Support.journalOf(result.run)
            const clock = Support.recordsOfKind(records, "EffectDone").map((r) => r.kind.output)
            // The body's own read and the deadline's read of the journaled clock, then the resolve.
            expect(descriptorKinds(records)).toEqual(["clock.now", "clock.now", "deadline.resolve"])
            expect(clock[1]).toBeGreaterThanOrEqual(now)
            expect(at).toBe((clock[1] as number) + 600)
            const calendar = yield* Calendar.Calendar
            expect(Support.recordsOfKind(records, "DeadlineRegistered").map((r) => r.kind)).toEqual([
              { kind: "DeadlineRegistered", name: "reply", resolved_at: at, calendar_digest: calendar.digest },
            ])
            const stored = yield* Effect.flatMap(CaseStore, (c) => c.deadlines(kase))
            expect(stored.map((d) => [d.name, d.resolvedAt, Option.getOrUndefined(d.warnAt), d.state])).toEqual([
              ["reply", at, at - 120, "pending"],
            ])
          }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
        },
      )

      it.live("closing with an outstanding deadline is ObligationsOutstanding; after meetDeadline it closes", () => {
        const def = oneStep(
          "case.close",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("reply", Deadline.minutes(10))
            yield* cx.deadline("spare", Deadline.minutes(20))
            const refused = yield* Effect.flip(cx.setCaseStatus("closed"))
            const met = yield* cx.meetDeadline("reply")
            const cancelled = yield* cx.cancelDeadline("spare")
            yield* cx.setCaseStatus("closed")
            return { refused: refused._tag, met: met.from, cancelled: cancelled.from }
          }),
        )
        return Effect.gen(function* () {
          const { result, kase } = yield* inCase(def)
          expect(result.output).toEqual(
            Option.some({ refused: "ObligationsOutstanding", met: "pending", cancelled: "pending" }),
          )
          const cases = yield* CaseStore
          expect(Option.getOrThrow(yield* cases.case(kase)).status).toBe("closed")
          const states = (yield* cases.deadlines(kase)).map((d) => [d.name, d.state])
          expect(states).toEqual(
            expect.arrayContaining([
              ["reply", "met"],
              ["spare", "cancelled"],
            ]),
          )
          const records = yield* Support.journalOf(result.run)
          expect(Support.recordsOfKind(records, "DeadlineTransition").map((r) => r.kind)).toEqual([
            { kind: "DeadlineTransition", name: "reply", from: "pending", to: "met" },
            { kind: "DeadlineTransition", name: "spare", from: "pending", to: "cancelled" },
          ])
          expect(descriptorKinds(records).filter((k) => k.startsWith("case."))).toEqual([
            "case.set_status",
            "case.transition_deadline",
            "case.transition_deadline",
            "case.set_status",
          ])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a run without a case cannot register a deadline: a plan-contract failure", () => {
        const def = oneStep(
          "case.none",
          Effect.flatMap(StepCtx, (cx) => cx.deadline("reply", Deadline.minutes(1))).pipe(Effect.as(1)),
        )
        return Effect.gen(function* () {
          const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
          expect(result.status._tag).toBe("Failed")
          expect((result.status as { readonly message: string }).message).toContain("plan contract")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("Strict replay", () => {
      it.live("replays state, status and deadline effects from the journal and writes nothing to the case", () => {
        const def = oneStep(
          "case.strict",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const read = yield* cx.caseState
            yield* cx.putCaseState(read.version, { step: 1 })
            yield* cx.deadline("reply", Deadline.minutes(10))
            yield* cx.meetDeadline("reply")
            yield* cx.setCaseStatus("escalated")
            return 1
          }),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const cases = yield* CaseStore
          const { result, kase } = yield* inCase(def)
          expect(result.status._tag).toBe("Succeeded")
          // Move the case on after the run: a replay that wrote would undo this.
          const moved = yield* cases.putState(kase, Option.getOrThrow(yield* cases.case(kase)).version, { step: 2 })
          yield* cases.setStatus(kase, "open")
          yield* cases.setDeadlineState(kase, "reply", "pending")
          const before = { kase: yield* cases.case(kase), deadlines: yield* cases.deadlines(kase) }
          const journal = (yield* Support.journalOf(result.run)).length
          const report = yield* rt.replay(result.run)
          expect(report.reproduced).toBe(true)
          expect({ kase: yield* cases.case(kase), deadlines: yield* cases.deadlines(kase) }).toEqual(before)
          expect(Option.getOrThrow(before.kase).version).toBe(moved)
          expect((yield* Support.journalOf(result.run)).length).toBe(journal)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })
  })
