/**
 * §7.1 recovery, crash by crash: for each Recovery, a run crashed after announce, after act and
 * after record, resumed by a fresh runtime once the dead owner's lease lapsed, performs each act
 * the number of times the Recovery table allows, counted outside the journal (§7.11 verdicts).
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { expect } from "vitest"
import * as Digest from "../../src/domain/Digest.js"
import type * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import type { CrashPoint } from "../../src/runtime/Execution.js"
import type * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const KIND = "test.crash.act"

type Verdict = "landed" | "did_not_happen" | "in_doubt"

export interface Scenario {
  readonly recovery: Run.Recovery
  readonly point: CrashPoint
  /** What the Reconcile probe answers. */
  readonly verdict?: Verdict
  readonly retry?: Run.RetryPolicy
  /** Fails the first attempt in doubt (a timeout after the request left) instead of answering. */
  readonly firstTimesOut?: boolean
  /** The crashing effect is a read (the run's first act, as an agent's model call usually is). */
  readonly read?: boolean
}

/** Runs a one-effect definition (then a read) crashing at the point, then resumes it from a fresh runtime. */
export const crashAndResume = (backend: Backend.Backend, capability: string, s: Scenario) => {
  const counter = new Support.Counter()
  const probe = (args: { readonly n: number }) =>
    Effect.sync(() => {
      counter.bump("probe")
      switch (s.verdict) {
        case "landed":
          return EffectKind.Verdict.Landed({ output: { ok: "probed", n: args.n + 100 } })
        case "did_not_happen":
          return EffectKind.Verdict.DidNotHappen()
        default:
          return EffectKind.Verdict.InDoubt({ detail: "the provider cannot say" })
      }
    })
  const { kind, seen } = Support.witnessing(counter, KIND, {
    mutates: s.read !== true,
    recovery: s.recovery,
    retry: s.retry ?? new Run.RetryPolicy({ maxAttempts: 2, backoffMs: 1 }),
    ...(s.recovery._tag === "Reconcile" ? { probe } : {}),
    script: (a) =>
      s.firstTimesOut === true && a.attempt === 1
        ? Effect.fail(new EffectKind.Transient({ message: "timed out", disposition: "in_doubt" }))
        : Effect.void,
  })
  const after = Support.counting(counter, "test.crash.after", { mutates: false })
  const def = Support.sequence(capability, [kind, after])
  return Effect.gen(function* () {
    const crashed = yield* runCrashing(backend, def, { leaseTtlSecs: 1, crash: TestRuntime.crashAt(s.point, KIND) })
    const actsBefore = counter.get(KIND)
    const result: Runtime.RunResult<unknown> = yield* Support.on(Support.runtime(backend, [def]))(
      Support.resumeAfterLapse(crashed.run),
    )
    const records = yield* Effect.provide(Support.journalOf(crashed.run), backend.layer)
    return { run: crashed.run, def, result, records, counter, seen, actsBefore }
  })
}

/** Admits and drives `def` on a runtime that crashes; answers the `Crashed` error. */
const runCrashing = (backend: Backend.Backend, def: RunDefinition.Any, options: Runtime.Options) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test"))).pipe(
    Effect.flip,
    Effect.flatMap((e) =>
      e instanceof Runtime.Crashed ? Effect.succeed(e) : Effect.dieMessage(`not a crash: ${e._tag}`),
    ),
    Support.on(Support.runtime(backend, [def], options)),
  )

const keysOf = (records: ReadonlyArray<Journal.Record>, kind: Journal.KindTag) =>
  Support.ofKind(records, kind).map((r) => Option.getOrThrow(r.record.effectKey))

const quarantineMessage = (status: Run.RunStatus) => (status._tag === "Quarantined" ? status.message : "")

export const suite = (backend: Backend.Backend) =>
  describe("crash points", () => {
    const at = (recovery: Run.Recovery, point: CrashPoint, extra: Partial<Scenario> = {}) =>
      crashAndResume(backend, `crash.${recovery._tag}.${point}`, { recovery, point, ...extra })

    describe("Retry", () => {
      it.live("after announce: performed on resume, once", () =>
        Effect.gen(function* () {
          const r = yield* at(Run.Recovery.Retry(), "after_announce")
          expect(r.actsBefore).toBe(0)
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get(KIND)).toBe(1)
          expect(r.counter.get("test.crash.after")).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after act: performed again", () =>
        Effect.gen(function* () {
          const r = yield* at(Run.Recovery.Retry(), "after_act")
          expect(r.actsBefore).toBe(1)
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(2)
          // Again under its announcement: still one effect with one outcome.
          const [key] = keysOf(r.records, "EffectStarted")
          expect(keysOf(r.records, "EffectDone").filter((k) => k === key)).toHaveLength(1)
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after record: never performed again", () =>
        Effect.gen(function* () {
          const r = yield* at(Run.Recovery.Retry(), "after_record")
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
    })

    // §7.11: a read is announced before it acts and the admission before the first act, so a
    // run whose first act is a read is durable and resumable from the moment it reads.
    describe("a read as the run's first act", () => {
      const read = (point: CrashPoint) => at(Run.Recovery.Retry(), point, { read: true })
      it.live("after announce: the read never acted; resume performs it once", () =>
        Effect.gen(function* () {
          const r = yield* read("after_announce")
          expect(r.actsBefore).toBe(0)
          expect(r.records[0]?.kind.kind).toBe("RunAdmitted")
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get(KIND)).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
      it.live("during the act (acted, not recorded): resume performs it once more under its announcement", () =>
        Effect.gen(function* () {
          const r = yield* read("after_act")
          expect(r.actsBefore).toBe(1)
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get(KIND)).toBe(2)
          const [key] = keysOf(r.records, "EffectStarted")
          expect(keysOf(r.records, "EffectStarted").filter((k) => k === key)).toHaveLength(1)
          expect(keysOf(r.records, "EffectDone").filter((k) => k === key)).toHaveLength(1)
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after record: never performed again", () =>
        Effect.gen(function* () {
          const r = yield* read("after_record")
          expect(r.actsBefore).toBe(1)
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get(KIND)).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
    })

    describe("Idempotent", () => {
      const idempotent = Run.Recovery.Idempotent({ key: Option.none() })
      // The default provider key: SHA-256 of the run and the first attempt's effect key, so every
      // attempt of the effect sends the same key and no other run's effect ever does.
      const providerKey = (r: {
        readonly result: Runtime.RunResult<unknown>
        readonly records: ReadonlyArray<Journal.Record>
      }) => Digest.of(`${r.result.run}/${keysOf(r.records, "EffectStarted")[0]}`)
      it.live("after announce: performed on resume with the key of the run and the first attempt", () =>
        Effect.gen(function* () {
          const r = yield* at(idempotent, "after_announce")
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(1)
          expect(r.seen.map((a) => a.idempotencyKey)).toEqual([providerKey(r)])
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after act: performed again with the same idempotency key", () =>
        Effect.gen(function* () {
          const r = yield* at(idempotent, "after_act")
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(2)
          expect(r.seen.map((a) => a.idempotencyKey)).toEqual([providerKey(r), providerKey(r)])
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after act, with a key from the arguments: the provider sees that key both times", () =>
        Effect.gen(function* () {
          const r = yield* at(
            Run.Recovery.Idempotent({ key: Option.some((args) => `order-${JSON.stringify(args)}`) }),
            "after_act",
          )
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.seen.map((a) => a.idempotencyKey)).toEqual(['order-{"n":1}', 'order-{"n":1}'])
        }).pipe(Backend.asFreshTenant),
      )
      it.live("after record: never performed again", () =>
        Effect.gen(function* () {
          const r = yield* at(idempotent, "after_record")
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
    })

    describe("Reconcile", () => {
      const reconcile = Run.Recovery.Reconcile()
      const reconciled = (records: ReadonlyArray<Journal.Record>) =>
        Support.ofKind(records, "EffectReconciled").map((r) => [r.kind.disposition, r.kind.output])
      for (const point of ["after_announce", "after_act"] as const) {
        const before = point === "after_announce" ? 0 : 1
        it.live(
          `${point.replace("_", " ")}, the probe finds it landed: EffectReconciled, and the run continues with the probe's answer`,
          () =>
            Effect.gen(function* () {
              const r = yield* at(reconcile, point, { verdict: "landed" })
              expect(r.counter.get("probe")).toBe(1)
              expect(r.counter.get(KIND)).toBe(before)
              expect(reconciled(r.records)).toEqual([["landed", { ok: "probed", n: 101 }]])
              expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 101 }))
            }).pipe(Backend.asFreshTenant),
        )
        it.live(
          `${point.replace("_", " ")}, the probe finds it did not happen: performed again as the next attempt, with a new key`,
          () =>
            Effect.gen(function* () {
              const r = yield* at(reconcile, point, { verdict: "did_not_happen" })
              expect(r.counter.get("probe")).toBe(1)
              expect(r.counter.get(KIND)).toBe(before + 1)
              expect(reconciled(r.records)).toEqual([["did_not_happen", null]])
              const started = Support.ofKind(r.records, "EffectStarted").filter(
                (s) => s.kind.descriptor !== null && (s.kind.descriptor as { kind: string }).kind === KIND,
              )
              expect(started.map((s) => s.kind.attempt)).toEqual([1, 2])
              const [k1, k2] = started.map((s) => Option.getOrThrow(s.record.effectKey))
              expect(k1).not.toBe(k2)
              expect(keysOf(r.records, "EffectReconciled")).toEqual([k1])
              expect(keysOf(r.records, "EffectDone")).toContain(k2)
              expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
            }).pipe(Backend.asFreshTenant),
        )
        it.live(
          `${point.replace("_", " ")}, the probe cannot tell: EffectReconciled in_doubt, quarantined, not performed`,
          () =>
            Effect.gen(function* () {
              const r = yield* at(reconcile, point, { verdict: "in_doubt" })
              expect(r.counter.get("probe")).toBe(1)
              expect(r.counter.get(KIND)).toBe(before)
              expect(reconciled(r.records)).toEqual([["in_doubt", null]])
              expect(r.result.status._tag).toBe("Quarantined")
              expect(quarantineMessage(r.result.status)).toContain("the provider cannot say")
              expect(r.counter.get("test.crash.after")).toBe(0)
            }).pipe(Backend.asFreshTenant),
        )
      }
      it.live("after record: neither probed nor performed again", () =>
        Effect.gen(function* () {
          const r = yield* at(reconcile, "after_record", { verdict: "landed" })
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get("probe")).toBe(0)
          expect(r.counter.get(KIND)).toBe(1)
          expect(reconciled(r.records)).toEqual([])
        }).pipe(Backend.asFreshTenant),
      )
    })

    describe("RequiresOperator", () => {
      const operator = Run.Recovery.RequiresOperator()
      for (const point of ["after_announce", "after_act"] as const) {
        it.live(`${point.replace("_", " ")}: never performed again; quarantined naming the effect, and closed`, () =>
          Effect.gen(function* () {
            const r = yield* at(operator, point)
            expect(r.counter.get(KIND)).toBe(r.actsBefore)
            expect(r.result.status._tag).toBe("Quarantined")
            const key = keysOf(r.records, "EffectStarted")[0]
            expect(quarantineMessage(r.result.status)).toContain(`${KIND} ek:${key}`)
            expect(keysOf(r.records, "EffectDone")).toEqual([])
            expect(r.counter.get("test.crash.after")).toBe(0)
            const sealed = Support.ofKind(r.records, "RunSealed").map((s) => s.kind.outcome)
            expect(sealed).toEqual(["quarantined"])
            const again = yield* Support.on(Support.runtime(backend, [r.def]))(
              Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(r.run)).pipe(Effect.flip),
            )
            expect(again._tag).toBe("RunClosed")
            expect(r.counter.get(KIND)).toBe(r.actsBefore)
          }).pipe(Backend.asFreshTenant),
        )
      }
      it.live("after record: never performed again, and the run goes on", () =>
        Effect.gen(function* () {
          const r = yield* at(operator, "after_record")
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.counter.get(KIND)).toBe(1)
        }).pipe(Backend.asFreshTenant),
      )
    })

    describe("an in_doubt failure journaled before the crash (§7.11)", () => {
      it.live("Retry performs again, as the next attempt", () =>
        Effect.gen(function* () {
          const r = yield* at(Run.Recovery.Retry(), "after_record", { firstTimesOut: true })
          expect(r.result.status._tag).toBe("Succeeded")
          expect(r.seen.map((a) => a.attempt)).toEqual([1, 2])
        }).pipe(Backend.asFreshTenant),
      )
      it.live("Reconcile asks the probe", () =>
        Effect.gen(function* () {
          const r = yield* at(Run.Recovery.Reconcile(), "after_record", { firstTimesOut: true, verdict: "landed" })
          expect(r.counter.get("probe")).toBe(1)
          expect(r.counter.get(KIND)).toBe(1)
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 101 }))
        }).pipe(Backend.asFreshTenant),
      )
    })

    describe("leases", () => {
      it.live("resume while the owner's lease is live fails with LeaseHeld and runs nothing", () => {
        const counter = new Support.Counter()
        const kind = Support.counting(counter, KIND, { mutates: true, recovery: Run.Recovery.Retry() })
        const def = Support.sequence("crash.live-owner", [kind])
        return Effect.gen(function* () {
          const crashed = yield* runCrashing(backend, def, { crash: TestRuntime.crashAt("after_announce", KIND) })
          const before = yield* Effect.provide(Support.journalOf(crashed.run), backend.layer)
          const refused = yield* Support.on(Support.runtime(backend, [def]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(crashed.run)).pipe(Effect.flip),
          )
          expect(refused._tag).toBe("LeaseHeld")
          expect(counter.get(KIND)).toBe(0)
          expect(yield* Effect.provide(Support.journalOf(crashed.run), backend.layer)).toEqual(before)
        }).pipe(Backend.asFreshTenant)
      })
    })
  })
