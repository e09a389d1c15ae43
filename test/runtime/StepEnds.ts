/**
 * §7.13 a step the journal shows finished is fixed (`src/runtime/StepEnds.ts`): code that asks
 * it for a new effect, or ends it before an effect it journaled, diverges at that step. Resume
 * then quarantines rather than performing the new effect, and Strict names the step.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/** A mutating kind that counts its acts in `counter` under its name. */
const counted = (counter: Support.Counter, name: string) =>
  EffectKind.make<number, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Number,
    mutates: true,
    recovery: Run.Recovery.Retry(),
    act: ({ n }) =>
      Effect.sync(() => {
        counter.bump(name)
        return n
      }),
  })

/** How the later build's first step differs: nothing, one effect added at its end, its only effect removed. */
type Edit = "none" | "added" | "removed"

/** Step one reserves; step two waits an hour on a timer, then charges: runs stay suspended in step two. */
const orders = (counter: Support.Counter, edit: Edit) => {
  const [reserve, notify, charge] = [
    counted(counter, "ends.reserve"),
    counted(counter, "ends.notify"),
    counted(counter, "ends.charge"),
  ]
  return RunDefinition.make({
    capability: "ends.orders",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "reserve",
        body: (input: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const reserved = edit === "removed" ? 0 : yield* cx.perform(reserve, { n: input.n })
            if (edit === "added") yield* cx.perform(notify, { n: input.n })
            return reserved
          }),
      }),
      Step.make({
        name: "charge",
        body: (input: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.sleep(3600)
            return yield* cx.perform(charge, { n: input.n })
          }),
      }),
    ],
  })
}

const rt = Effect.flatMap(Runtime.Runtime, Effect.succeed)

export const suite = (backend: Backend.Backend) =>
  describe("a finished step's end (§7.13)", () => {
    const under = (counter: Support.Counter, edit: Edit) => {
      const def = orders(counter, edit)
      return { def, on: Support.on(Support.runtime(backend, [def])) }
    }
    /** A run suspended in step two, recorded by the unchanged build. */
    const suspended = (counter: Support.Counter) =>
      Effect.gen(function* () {
        const recorded = under(counter, "none")
        const first = yield* recorded.on(Effect.flatMap(rt, (r) => r.run(recorded.def, Run.labeled({ n: 1 }, "test"))))
        expect(first.status._tag).toBe("Suspended")
        return first.run
      })
    const journalLength = (run: RunId) =>
      Effect.map(Effect.provide(Support.journalOf(run), backend.layer), (records) => records.length)

    it.live("an effect added at a finished step's end: Resume quarantines and never performs it", () => {
      const counter = new Support.Counter()
      return Effect.gen(function* () {
        const run = yield* suspended(counter)
        const before = yield* journalLength(run)
        const changed = under(counter, "added")
        const resumed = yield* changed.on(Effect.flatMap(rt, (r) => r.resume(run)))
        expect(resumed.status._tag).toBe("Quarantined")
        const message = resumed.status._tag === "Quarantined" ? resumed.status.message : ""
        expect(message).toContain("the journal shows the step finished without it")
        expect(message).toContain("ends.notify")
        expect(message).toContain("(step 0 reserve, forward)")
        expect([counter.get("ends.reserve"), counter.get("ends.notify"), counter.get("ends.charge")]).toEqual([1, 0, 0])
        // Nothing of the new effect was journaled (no announcement, no policy decision): only the
        // quarantine's seal, whose reason names it.
        const records = yield* Effect.provide(Support.journalOf(run), backend.layer)
        const naming = records.slice(before).filter((r) => JSON.stringify(r.kind).includes("ends.notify"))
        expect(naming.map((r) => r.kind.kind)).toEqual(["RunSealed"])
        expect(records.slice(0, before).filter((r) => JSON.stringify(r.kind).includes("ends.notify"))).toEqual([])
      }).pipe(Backend.asFreshTenant)
    })

    it.live("Strict replay of the same change names the finished step, not an overrun", () => {
      const counter = new Support.Counter()
      return Effect.gen(function* () {
        const run = yield* suspended(counter)
        const changed = under(counter, "added")
        const report = yield* changed.on(Effect.flatMap(rt, (r) => r.replay(run)))
        expect(report.reproduced).toBe(false)
        const divergence = Option.getOrThrow(report.divergence)
        expect([divergence.expected.kind, divergence.offered.kind]).toEqual(["StepFinished", "ends.notify"])
      }).pipe(Backend.asFreshTenant)
    })

    it.live("an effect removed from a finished step: the step's end diverges at the skipped effect", () => {
      const counter = new Support.Counter()
      return Effect.gen(function* () {
        const run = yield* suspended(counter)
        const changed = under(counter, "removed")
        const report = yield* changed.on(Effect.flatMap(rt, (r) => r.replay(run)))
        expect(report.reproduced).toBe(false)
        const divergence = Option.getOrThrow(report.divergence)
        expect([divergence.expected.kind, divergence.offered.kind]).toEqual(["ends.reserve", "StepFinished"])
        const resumed = yield* changed.on(Effect.flatMap(rt, (r) => r.resume(run)))
        expect(resumed.status._tag).toBe("Quarantined")
        const message = resumed.status._tag === "Quarantined" ? resumed.status.message : ""
        expect(message).toContain("the step ended without reaching journaled effect ends.reserve")
        expect(counter.get("ends.charge")).toBe(0)
      }).pipe(Backend.asFreshTenant)
    })

    it.live("the unchanged build resumes the same run and goes on waiting", () => {
      const counter = new Support.Counter()
      return Effect.gen(function* () {
        const run = yield* suspended(counter)
        const same = under(counter, "none")
        const resumed = yield* same.on(Effect.flatMap(rt, (r) => r.resume(run)))
        expect(resumed.status._tag).toBe("Suspended")
        const report = yield* same.on(Effect.flatMap(rt, (r) => r.replay(run)))
        expect(report.divergence).toEqual(Option.none())
        expect(counter.get("ends.reserve")).toBe(1)
      }).pipe(Backend.asFreshTenant)
    })
  })
