/**
 * §7.1: announce, act, record; keys; what a journal looks like after a run.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

export const suite = (backend: Backend.Backend) =>
  describe("protocol", () => {
    it.live("a run of two mutating effects journals admission, announce and outcome of each, and a seal", () => {
      const counter = new Support.Counter()
      const a = Support.counting(counter, "test.a", { mutates: true, recovery: Run.Recovery.Retry() })
      const b = Support.counting(counter, "test.b", { mutates: true })
      const def = RunDefinition.make({
        capability: "protocol.two",
        input: Schema.Struct({ n: Schema.Number }),
        output: Schema.Number,
        plan: [
          Step.make({
            name: "both",
            body: (input: { readonly n: number }) =>
              Effect.gen(function* () {
                const cx = yield* StepCtx
                const x = yield* cx.perform(a, { n: input.n })
                const y = yield* cx.perform(b, { n: x.n + 1 })
                return y.n
              }),
          }),
        ],
      })
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const result = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
        expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 2 }))
        expect(counter.get("test.a")).toBe(1)
        expect(counter.get("test.b")).toBe(1)
        const journal = yield* JournalStore
        const kinds = (yield* journal.read(result.run, 1)).map((r) => r.kind.kind)
        expect(kinds).toEqual([
          "RunAdmitted",
          "PlanFrozen",
          "StepStarted",
          "EffectStarted",
          "EffectDone",
          "EffectStarted",
          "EffectDone",
          "StepFinished",
          "RunSealed",
        ])
        const head = yield* journal.verify(result.run)
        expect(head.seq).toBe(kinds.length)
        expect(
          Option.isSome(
            yield* journal
              .runsByOutcome("succeeded", 1000)
              .pipe(Effect.map((rs) => Option.fromNullable(rs.find((r) => r === result.run)))),
          ),
        ).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })
  })
