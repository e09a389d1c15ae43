/**
 * §7.1 attempts: every retry is a new effect with a new key, the RetryPolicy spaces them (backoff
 * journaled in `backoff_ms`, a provider's Retry-After capped by `maxAdviceMs`), a declared rejection
 * is permanent and reaches the step typed, and a failure in doubt follows the Recovery (§7.11).
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { StepId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const transient = (message: string, options: { readonly inDoubt?: boolean; readonly retryAfterMs?: number } = {}) =>
  new EffectKind.Transient({
    message,
    disposition: options.inDoubt === true ? "in_doubt" : "did_not_happen",
    ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
  })

/** Fails attempts before `succeedAt` with `failure(attempt)`. */
const failUntil =
  (succeedAt: number, failure: (attempt: number) => EffectKind.Transient = (a) => transient(`attempt ${a} refused`)) =>
  (attempt: EffectKind.Attempt) =>
    attempt.attempt < succeedAt ? Effect.fail(failure(attempt.attempt)) : Effect.void

const runOne = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))

export const suite = (backend: Backend.Backend) =>
  describe("attempts", () => {
    describe("retries", () => {
      it.live("every retry is a new effect: the attempt enters the key, and each failure is journaled", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.retry.flaky", {
          mutates: true,
          recovery: Run.Recovery.Retry(),
          retry: new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 5 }),
          script: failUntil(3),
        })
        const def = Support.sequence("attempts.flaky", [kind])
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(counter.get("test.retry.flaky")).toBe(3)
          const records = yield* Support.journalOf(result.run)
          const started = Support.ofKind(records, "EffectStarted")
          expect(started.map((s) => s.kind.attempt)).toEqual([1, 2, 3])
          const keys = started.map((s) => Option.getOrThrow(s.record.effectKey))
          expect(keys).toEqual(
            [1, 2, 3].map((attempt) =>
              EffectKey.derive({
                step: StepId.make(0),
                phase: "forward",
                ordinal: 0,
                attempt,
                kind: "test.retry.flaky",
                args: { n: 1 },
              }),
            ),
          )
          expect(new Set(keys).size).toBe(3)
          const failed = Support.ofKind(records, "EffectFailed")
          expect(failed.map((f) => Option.getOrThrow(f.record.effectKey))).toEqual(keys.slice(0, 2))
          expect(failed.map((f) => [f.kind.permanent, f.kind.disposition])).toEqual([
            [false, "did_not_happen"],
            [false, "did_not_happen"],
          ])
          const done = Support.ofKind(records, "EffectDone")
          expect(done.map((d) => Option.getOrThrow(d.record.effectKey))).toEqual([keys[2]])
          // Doubling from backoffMs, journaled on the attempt that waited.
          expect(started.map((s) => s.kind.backoff_ms)).toEqual([0, 5, 10])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("backoff doubles from backoffMs and each wait is capped by maxBackoffMs (default 10 s)", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.retry.capped", {
          mutates: false,
          retry: new Run.RetryPolicy({ maxAttempts: 4, backoffMs: 4, maxBackoffMs: 10 }),
          script: failUntil(4),
        })
        const def = Support.sequence("attempts.capped", [kind])
        expect(new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 1 }).maxBackoffMs).toBe(10_000)
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status._tag).toBe("Succeeded")
          const started = Support.ofKind(yield* Support.journalOf(result.run), "EffectStarted")
          expect(started.map((s) => s.kind.backoff_ms)).toEqual([0, 4, 8, 10])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a provider's Retry-After replaces the doubling, capped by maxAdviceMs (default 60 s)", () => {
        const counter = new Support.Counter()
        const advice = [7, 600_000]
        const { kind } = Support.witnessing(counter, "test.retry.advised", {
          mutates: false,
          retry: new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 1, maxAdviceMs: 20 }),
          script: failUntil(3, (a) => transient("slow down", { retryAfterMs: advice[a - 1] as number })),
        })
        const def = Support.sequence("attempts.advised", [kind])
        expect(new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 1 }).maxAdviceMs).toBe(60_000)
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status._tag).toBe("Succeeded")
          const started = Support.ofKind(yield* Support.journalOf(result.run), "EffectStarted")
          expect(started.map((s) => s.kind.backoff_ms)).toEqual([0, 7, 20])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("when the attempts run out the run is Failed and stays open; resume replays them without acting", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.retry.hopeless", {
          mutates: true,
          recovery: Run.Recovery.Retry(),
          retry: new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 1 }),
          script: failUntil(Number.POSITIVE_INFINITY),
        })
        const def = Support.sequence("attempts.hopeless", [kind])
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status._tag).toBe("Failed")
          expect(counter.get("test.retry.hopeless")).toBe(2)
          expect(yield* Support.concludedAs(result.run, "failed")).toBe(true)
          const again = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(result.run))
          expect(again.status._tag).toBe("Failed")
          expect(counter.get("test.retry.hopeless")).toBe(2)
          // Strict replay of the failed run reproduces it, acting on nothing.
          const replayed = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(result.run))
          expect(replayed.reproduced).toBe(true)
          expect(counter.get("test.retry.hopeless")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("rejections", () => {
      it.live(
        "a declared rejection is journaled EffectFailed (permanent) and reaches the step typed, never retried",
        () => {
          const counter = new Support.Counter()
          const pay = Support.acting(
            "test.reject.pay",
            { mutates: true, retry: new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 1 }) },
            () =>
              Effect.zipRight(
                Effect.sync(() => counter.bump("pay")),
                Effect.fail(new Support.Rejected({ reason: "card declined" })),
              ),
          )
          const def = RunDefinition.make({
            capability: "attempts.rejected",
            input: Schema.Struct({ n: Schema.Number }),
            output: Schema.String,
            plan: [
              Step.make({
                name: "pay",
                body: (input: { readonly n: number }) =>
                  Effect.flatMap(StepCtx, (cx) => cx.perform(pay, { n: input.n })).pipe(
                    Effect.map((a) => a.ok),
                    Effect.catchTag("Rejected", (e) =>
                      Effect.succeed(`${e instanceof Support.Rejected ? "typed" : "untyped"}: ${e.reason}`),
                    ),
                  ),
              }),
            ],
          })
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const result = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
            expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: "typed: card declined" }))
            expect(counter.get("pay")).toBe(1)
            const records = yield* Support.journalOf(result.run)
            expect(Support.ofKind(records, "EffectStarted")).toHaveLength(1)
            const failed = Support.ofKind(records, "EffectFailed")
            expect(failed.map((f) => [f.kind.permanent, f.kind.disposition, f.kind.error])).toEqual([
              [true, "landed", { _tag: "Rejected", reason: "card declined" }],
            ])
            // Replay decodes the journaled rejection into the same typed failure.
            const report = yield* rt.replay(result.run)
            expect(report.reproduced).toBe(true)
            expect(report.status).toEqual(result.status)
            expect(counter.get("pay")).toBe(1)
          }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
        },
      )
    })

    describe("in doubt (§7.11)", () => {
      it.live("a RequiresOperator act that timed out after the request left quarantines and is never retried", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.doubt.operator", {
          mutates: true,
          retry: new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 1 }),
          script: () => Effect.fail(transient("timed out", { inDoubt: true })),
        })
        const def = Support.sequence("attempts.doubt.operator", [kind])
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status._tag).toBe("Quarantined")
          expect(result.status._tag === "Quarantined" && result.status.message).toContain("test.doubt.operator")
          expect(counter.get("test.doubt.operator")).toBe(1)
          const failed = Support.ofKind(yield* Support.journalOf(result.run), "EffectFailed")
          expect(failed.map((f) => [f.kind.permanent, f.kind.disposition])).toEqual([[false, "in_doubt"]])
          expect(yield* Support.concludedAs(result.run, "quarantined")).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a Reconcile act that timed out in doubt asks the probe and continues with what it found", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.doubt.reconcile", {
          mutates: true,
          recovery: Run.Recovery.Reconcile(),
          retry: new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 1 }),
          probe: ({ n }) =>
            Effect.sync(() => {
              counter.bump("probe")
              return EffectKind.Verdict.Landed({ output: { ok: "probed", n: n + 10 } })
            }),
          script: () => Effect.fail(transient("timed out", { inDoubt: true })),
        })
        const def = Support.sequence("attempts.doubt.reconcile", [kind])
        return Effect.gen(function* () {
          const result = yield* runOne(def)
          expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 11 }))
          expect(counter.get("test.doubt.reconcile")).toBe(1)
          expect(counter.get("probe")).toBe(1)
          const records = yield* Support.journalOf(result.run)
          expect(Support.ofKind(records, "EffectReconciled").map((r) => [r.kind.disposition, r.kind.output])).toEqual([
            ["landed", { ok: "probed", n: 11 }],
          ])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })
  })
