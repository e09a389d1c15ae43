/**
 * §7.13 versioning markers: `cx.patched` answers true where a run meets the marker before its
 * journal went past that point, false where the run was recorded by code without it; the answer
 * is journaled and read back (Strict and Resume); `cx.deprecatePatch` quarantines a run that took
 * the old path; a marker removed while a journal holds its answer is caught by Strict replay.
 */
import { describe, it } from "@effect/vitest"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import { expect } from "vitest"
import * as Export from "../../src/archive/Export.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import { StepId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as Patches from "../../src/runtime/Patches.js"
import * as ReplayGate from "../../src/runtime/ReplayGate.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { type Service, StepCtx } from "../../src/runtime/StepCtx.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/**
 * The definition's code over time: `old` before the marker, `marked` with `if patched then new
 * else old`, `deprecated` with `deprecatePatch` and the new path only, and the marker removed
 * (`removed` keeps the new path, `removedOld` the old one).
 */
type Code = "old" | "marked" | "deprecated" | "removed" | "removedOld"

/** Which path the code takes at the marker's point (after the step's first effect). */
const choose = (cx: Service, code: Code): Effect.Effect<"new" | "old"> => {
  switch (code) {
    case "old":
    case "removedOld":
      return Effect.succeed("old")
    case "removed":
      return Effect.succeed("new")
    case "marked":
      return Effect.map(cx.patched("x"), (yes) => (yes ? "new" : "old"))
    case "deprecated":
      return Effect.as(cx.deprecatePatch("x"), "new")
  }
}

const kinds = (counter: Support.Counter) => {
  const kind = (name: string) => Support.counting(counter, name, { mutates: true, recovery: Run.Recovery.Retry() })
  return { a: kind("patched.a"), fresh: kind("patched.new"), stale: kind("patched.old") }
}

/** Performs `patched.a`, then the new (`patched.new`) or old (`patched.old`) path; a second step fails while `failing.value`. */
const paying = (counter: Support.Counter, code: Code, failing: { value: boolean }) => {
  const { a, fresh, stale } = kinds(counter)
  const pay = Step.make({
    name: "pay",
    role: Step.Unnecessary,
    body: (_input: { readonly n: number }) =>
      Effect.gen(function* () {
        const cx = yield* StepCtx
        yield* cx.perform(a, { n: 1 })
        const path = yield* choose(cx, code)
        return (yield* cx.perform(path === "new" ? fresh : stale, { n: 2 })).ok
      }),
  })
  const finish = Step.make({
    name: "finish",
    role: Step.Unnecessary,
    body: (_input: { readonly n: number }, prior) =>
      failing.value ? Effect.fail("not yet") : Effect.succeed(prior.of(pay)),
  })
  return RunDefinition.make({
    capability: "patched.pay",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.String,
    plan: [pay, finish],
  })
}

/** Performs `patched.a` and ends; `marked`, the new code, adds `patched.new` after it behind the marker. */
const tail = (counter: Support.Counter, marked: boolean) => {
  const { a, fresh } = kinds(counter)
  return RunDefinition.make({
    capability: "patched.tail",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.String,
    plan: [
      Step.make({
        name: "only",
        role: Step.Unnecessary,
        body: (_input: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.perform(a, { n: 1 })
            if (marked && (yield* cx.patched("x"))) return (yield* cx.perform(fresh, { n: 2 })).ok
            return "ended"
          }),
      }),
    ],
  })
}

const key = (order: string) => CorrelationKey.make("order", order)

/** Waits for a payment, then the new or old path: the marker stands after the wait. */
const waiting = (counter: Support.Counter, code: Code) => {
  const { fresh, stale } = kinds(counter)
  return RunDefinition.make({
    capability: "patched.wait",
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.String,
    plan: [
      Step.make({
        name: "wait",
        role: Step.Unnecessary,
        body: (input: { readonly order: string }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.deadline("paid", Deadline.days(3))
            yield* cx.awaitEvent({ kind: "patched.paid", correlation: [key(input.order)], deadline: "paid" })
            const path = yield* choose(cx, code)
            return (yield* cx.perform(path === "new" ? fresh : stale, { n: 2 })).ok
          }),
      }),
    ],
  })
}

const rt = Effect.flatMap(Runtime.Runtime, Effect.succeed)

/** The `Patched` records of a run's journal, as `[id, value, effect key]`. */
const markers = (backend: Backend.Backend, run: RunId) =>
  Effect.map(Effect.provide(Support.journalOf(run), backend.layer), (records) =>
    Support.ofKind(records, "Patched").map((p) => [p.kind.id, p.kind.value, Option.getOrNull(p.record.effectKey)]),
  )

const length = (backend: Backend.Backend, run: RunId) =>
  Effect.map(Effect.provide(Support.journalOf(run), backend.layer), (records) => records.length)

/** The key of marker `x` in the `pay` step: after its first effect, so at place 1. */
const X = Patches.keyOf({ step: StepId.make(0), phase: "forward", case: Option.none() }, 1, "x")

export const suite = (backend: Backend.Backend) =>
  describe("versioning markers (§7.13)", () => {
    /** A runtime with `paying(code)` registered, sharing `counter` and `failing`. */
    const withCode = (counter: Support.Counter, code: Code, failing: { value: boolean }) => {
      const def = paying(counter, code, failing)
      return { def, on: Support.on(Support.runtime(backend, [def])) }
    }
    const admit = (def: RunDefinition.Any) => Effect.flatMap(rt, (r) => r.run(def, Run.labeled({ n: 1 }, "test")))

    /** An old run (no marker), left failed at its second step, resumed with the marked code: it journals Patched{x, false}. */
    const oldRunAnsweredFalse = (counter: Support.Counter, failing: { value: boolean }) =>
      Effect.gen(function* () {
        const old = withCode(counter, "old", failing)
        const first = yield* old.on(admit(old.def))
        expect(first.status._tag).toBe("Failed")
        const marked = withCode(counter, "marked", failing)
        const resumed = yield* marked.on(Effect.flatMap(rt, (r) => r.resume(first.run)))
        expect(resumed.status._tag).toBe("Failed")
        return first.run
      })

    it.live(
      "a run that meets the marker live takes the new path, journals Patched{x, true} once, and replays it",
      () => {
        const counter = new Support.Counter()
        const failing = { value: false }
        return Effect.gen(function* () {
          const marked = withCode(counter, "marked", failing)
          const first = yield* marked.on(admit(marked.def))
          expect(first.status._tag).toBe("Succeeded")
          expect(Option.getOrUndefined(first.output)).toBe("patched.new")
          expect([counter.get("patched.new"), counter.get("patched.old")]).toEqual([1, 0])
          expect(yield* markers(backend, first.run)).toEqual([["x", true, X]])
          // Read back, not decided again: decided now, the journal's `patched.new` at the marker's
          // place would say the run went past it on the old path.
          const before = yield* length(backend, first.run)
          const report = yield* marked.on(Effect.flatMap(rt, (r) => r.replay(first.run)))
          expect(report.divergence).toEqual(Option.none())
          expect(report.reproduced).toBe(true)
          expect(yield* length(backend, first.run)).toBe(before)
          expect(counter.get("patched.new")).toBe(1)
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live("RunAdmitted records the definition's name, its version (1 by default) and its shape digest", () => {
      const counter = new Support.Counter()
      return Effect.gen(function* () {
        const marked = withCode(counter, "marked", { value: false })
        const first = yield* marked.on(admit(marked.def))
        const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
        const admitted = Support.ofKind(records, "RunAdmitted").map((r) => [
          r.kind.capability,
          r.kind.definition_version,
          r.kind.definition_digest,
        ])
        expect(admitted).toEqual([["patched.pay", "1", RunDefinition.shapeDigest(marked.def)]])
        expect(RunDefinition.shapeDigest(marked.def)).toMatch(/^[0-9a-f]{64}$/)
      }).pipe(Backend.asFreshTenant)
    })

    it.live("a run recorded before the marker existed replays Strict on the old path with no divergence", () => {
      const counter = new Support.Counter()
      const failing = { value: false }
      return Effect.gen(function* () {
        const old = withCode(counter, "old", failing)
        const first = yield* old.on(admit(old.def))
        expect(first.status._tag).toBe("Succeeded")
        const before = yield* length(backend, first.run)
        const marked = withCode(counter, "marked", failing)
        const report = yield* marked.on(Effect.flatMap(rt, (r) => r.replay(first.run)))
        expect(report.divergence).toEqual(Option.none())
        expect(report.reproduced).toBe(true)
        expect(report.status).toEqual(Run.RunStatus.Succeeded({ output: "patched.old" }))
        // Strict writes nothing, the answer included.
        expect(yield* length(backend, first.run)).toBe(before)
        expect(yield* markers(backend, first.run)).toEqual([])
        expect([counter.get("patched.new"), counter.get("patched.old")]).toEqual([0, 1])
      }).pipe(Backend.asFreshTenant)
    })

    it.live(
      "a run whose step ended where the marker now stands (nothing recorded past it) replays on the old path",
      () => {
        const counter = new Support.Counter()
        return Effect.gen(function* () {
          const old = tail(counter, false)
          const first = yield* Support.on(Support.runtime(backend, [old]))(
            Effect.flatMap(rt, (r) => r.run(old, Run.labeled({ n: 1 }, "test"))),
          )
          expect(first.status._tag).toBe("Succeeded")
          // The step's end is the journal's word that the run went past the marker's place.
          const marked = tail(counter, true)
          const report = yield* Support.on(Support.runtime(backend, [marked]))(
            Effect.flatMap(rt, (r) => r.replay(first.run)),
          )
          expect([report.reproduced, report.divergence]).toEqual([true, Option.none()])
          expect(report.status).toEqual(Run.RunStatus.Succeeded({ output: "ended" }))
          expect(counter.get("patched.new")).toBe(0)
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live("Resume of an old run journals Patched{x, false} once, keeps the old path, and replays it", () => {
      const counter = new Support.Counter()
      const failing = { value: true }
      return Effect.gen(function* () {
        const run = yield* oldRunAnsweredFalse(counter, failing)
        expect(yield* markers(backend, run)).toEqual([["x", false, X]])
        failing.value = false
        const marked = withCode(counter, "marked", failing)
        const done = yield* marked.on(Effect.flatMap(rt, (r) => r.resume(run)))
        expect(done.status).toEqual(Run.RunStatus.Succeeded({ output: "patched.old" }))
        // One answer, however often the run is resumed; the old path acted once, the new never.
        expect(yield* markers(backend, run)).toEqual([["x", false, X]])
        expect([counter.get("patched.a"), counter.get("patched.new"), counter.get("patched.old")]).toEqual([1, 0, 1])
        const report = yield* marked.on(Effect.flatMap(rt, (r) => r.replay(run)))
        expect([report.reproduced, report.divergence]).toEqual([true, Option.none()])
      }).pipe(Backend.asFreshTenant)
    })

    it.live("a run suspended before the marker is woken under the new code and takes the new path", () => {
      const counter = new Support.Counter()
      const order = `o-${crypto.randomUUID()}`
      const old = waiting(counter, "old")
      const marked = waiting(counter, "marked")
      return Effect.gen(function* () {
        const first = yield* Support.on(Support.runtime(backend, [old]))(
          Effect.flatMap(rt, (r) => r.runCorrelated(old, Run.labeled({ order }, "test"), "order", [key(order)])),
        )
        expect(first.status._tag).toBe("Suspended")
        yield* Support.on(Support.runtime(backend, [marked]))(
          Effect.gen(function* () {
            const r = yield* rt
            const event = new InboundEvent({
              source: "psp",
              id: `paid-${order}`,
              kind: "patched.paid",
              correlation: [key(order)],
              payload: {},
            })
            expect(yield* r.deliver(event)).toEqual(Runtime.Delivered.Resumed({ run: first.run }))
            yield* r.idle
          }),
        )
        expect([counter.get("patched.new"), counter.get("patched.old")]).toEqual([1, 0])
        expect(yield* Effect.provide(Support.concludedAs(first.run, "succeeded"), backend.layer)).toBe(true)
        const answers = yield* markers(backend, first.run)
        expect(answers.map(([id, value]) => [id, value])).toEqual([["x", true]])
      }).pipe(Backend.asFreshTenant)
    })

    describe("deprecatePatch", () => {
      it.live("quarantines a run whose journal holds Patched{x, false}, in Strict and Resume, acting nothing", () => {
        const counter = new Support.Counter()
        const failing = { value: true }
        return Effect.gen(function* () {
          const run = yield* oldRunAnsweredFalse(counter, failing)
          const deprecated = withCode(counter, "deprecated", failing)
          const before = yield* length(backend, run)
          const report = yield* deprecated.on(Effect.flatMap(rt, (r) => r.replay(run)))
          expect(report.reproduced).toBe(false)
          expect(report.status._tag).toBe("Quarantined")
          const divergence = Option.getOrThrow(report.divergence)
          expect([divergence.expected.kind, divergence.offered.kind]).toEqual([
            "Patched{x, false}",
            "deprecatePatch(x)",
          ])
          expect(divergence.expected.key).toBe(X)
          expect(yield* length(backend, run)).toBe(before)
          const resumed = yield* deprecated.on(Effect.flatMap(rt, (r) => r.resume(run)))
          expect(resumed.status._tag).toBe("Quarantined")
          const message = resumed.status._tag === "Quarantined" ? resumed.status.message : ""
          expect(message).toContain("Patched{x, false}")
          expect(message).toContain('old path of marker "x"')
          expect([counter.get("patched.new"), counter.get("patched.old")]).toEqual([0, 1])
        }).pipe(Backend.asFreshTenant)
      })

      it.live(
        "passes a run that took the new path (reading its answer) and a run with no answer, recording nothing",
        () => {
          const counter = new Support.Counter()
          const failing = { value: false }
          return Effect.gen(function* () {
            const marked = withCode(counter, "marked", failing)
            const took = yield* marked.on(admit(marked.def))
            const deprecated = withCode(counter, "deprecated", failing)
            const report = yield* deprecated.on(Effect.flatMap(rt, (r) => r.replay(took.run)))
            expect([report.reproduced, report.divergence]).toEqual([true, Option.none()])
            const fresh = yield* deprecated.on(admit(deprecated.def))
            expect(fresh.status).toEqual(Run.RunStatus.Succeeded({ output: "patched.new" }))
            expect(yield* markers(backend, fresh.run)).toEqual([])
            const again = yield* deprecated.on(Effect.flatMap(rt, (r) => r.replay(fresh.run)))
            expect(again.reproduced).toBe(true)
          }).pipe(Backend.asFreshTenant)
        },
      )
    })

    it.live("the replay gate passes old and new runs under the marked code, and catches the marker's removal", () => {
      const counter = new Support.Counter()
      const failing = { value: false }
      return Effect.gen(function* () {
        const old = withCode(counter, "old", failing)
        const oldRun = (yield* old.on(admit(old.def))).run
        const marked = withCode(counter, "marked", failing)
        const newRun = (yield* marked.on(admit(marked.def))).run
        const lines = Chunk.toReadonlyArray(
          yield* Stream.runCollect(Export.lines()).pipe(Effect.provide(backend.layer)),
        )
        const gate = (code: Code) =>
          Effect.gen(function* () {
            const verdicts = new Map<string, ReplayGate.Verdict>()
            yield* ReplayGate.check(Stream.fromIterable(lines), {
              ...Backend.replayOpener(backend),
              onVerdict: (v) => Effect.sync(() => verdicts.set(v.run ?? "", v)),
            }).pipe(Effect.provide(TestRuntime.replayLayer([paying(counter, code, failing)])))
            return verdicts
          })
        const underMarked = yield* gate("marked")
        expect([underMarked.get(oldRun)?.verdict, underMarked.get(newRun)?.verdict]).toEqual(["ok", "ok"])
        const underRemoved = yield* gate("removed")
        const caught = underRemoved.get(newRun)
        expect(caught?.verdict).toBe("nondeterministic")
        expect(caught?.verdict === "nondeterministic" ? caught.at?.recorded.kind : undefined).toBe("Patched{x, true}")
        // The old run took the old path, which the removed marker's code no longer has: caught too.
        expect(underRemoved.get(oldRun)?.verdict).toBe("nondeterministic")
      }).pipe(Backend.asFreshTenant)
    })

    describe("a removed marker", () => {
      it.live("is caught by Strict replay when the journal holds Patched{x, true}, though every effect matches", () => {
        const counter = new Support.Counter()
        const failing = { value: false }
        return Effect.gen(function* () {
          const marked = withCode(counter, "marked", failing)
          const first = yield* marked.on(admit(marked.def))
          const removed = withCode(counter, "removed", failing)
          const report = yield* removed.on(Effect.flatMap(rt, (r) => r.replay(first.run)))
          expect(report.reproduced).toBe(false)
          expect(report.status._tag).toBe("Quarantined")
          const divergence = Option.getOrThrow(report.divergence)
          expect([divergence.expected.kind, divergence.expected.key]).toEqual(["Patched{x, true}", X])
          const message = report.status._tag === "Quarantined" ? report.status.message : ""
          expect(message).toContain("a marker was removed while the run depends on it")
        }).pipe(Backend.asFreshTenant)
      })

      it.live("is caught by Strict replay when the journal holds Patched{x, false} and the old path is kept", () => {
        const counter = new Support.Counter()
        const failing = { value: true }
        return Effect.gen(function* () {
          const run = yield* oldRunAnsweredFalse(counter, failing)
          failing.value = false
          const marked = withCode(counter, "marked", failing)
          expect((yield* marked.on(Effect.flatMap(rt, (r) => r.resume(run)))).status._tag).toBe("Succeeded")
          const removed = withCode(counter, "removedOld", failing)
          const report = yield* removed.on(Effect.flatMap(rt, (r) => r.replay(run)))
          expect(report.reproduced).toBe(false)
          expect(Option.map(report.divergence, (d) => d.expected.kind)).toEqual(Option.some("Patched{x, false}"))
        }).pipe(Backend.asFreshTenant)
      })
    })
  })
