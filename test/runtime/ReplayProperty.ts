/**
 * §7.13 the replay gate as a property: for random plans and a random single-step edit of each,
 * the gate says `ok` exactly when the edit leaves every recorded answer where it was, and
 * otherwise names the step of the first answer that moved.
 *
 * The oracle is a model of what a journal fixes: per step, the effects asked in order, each by its
 * kind and arguments. An edit that changes none of them (an argument set to the value it had, two
 * equal effects swapped, a pure computation added) must pass; any other must be caught, as
 * `nondeterministic` in the first step whose sequence differs, or `overrun` where the edit only adds
 * a step past the end of a concluded run.
 *
 * Many samples share one recording and one check (a definition per sample), so the property costs a
 * few runs' worth on a database, not a few hundred checks.
 */
import { describe, it } from "@effect/vitest"
import { Chunk, Effect, FastCheck as fc, Option, Schema, Stream } from "effect"
import { expect } from "vitest"
import * as Export from "../../src/archive/Export.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as ReplayGate from "../../src/runtime/ReplayGate.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import { kind } from "../cli/replay/Orders.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const KINDS = [kind("prop.k0"), kind("prop.k1"), kind("prop.k2")] as const

/** One effect a step asks for: which kind, with which argument. */
interface Call {
  readonly kind: number
  readonly n: number
}

/** A step's calls in order, and whether it also computes something pure (which the journal never sees). */
interface StepPlan {
  readonly calls: ReadonlyArray<Call>
  readonly pure: boolean
}

type Plan = ReadonlyArray<StepPlan>

/** A single-step edit of a plan; `at` and `to` are drawn large and reduced modulo what exists. */
type Edit =
  | { readonly tag: "args"; readonly at: number; readonly n: number }
  | { readonly tag: "kind"; readonly at: number; readonly kind: number }
  | { readonly tag: "insert"; readonly at: number; readonly call: Call }
  | { readonly tag: "delete"; readonly at: number }
  | { readonly tag: "swap"; readonly at: number }
  | { readonly tag: "pure"; readonly at: number }
  | { readonly tag: "move"; readonly at: number }
  | { readonly tag: "append-step"; readonly call: Call }

const call = fc.record({ kind: fc.integer({ min: 0, max: KINDS.length - 1 }), n: fc.integer({ min: 0, max: 2 }) })
const stepPlan = fc.record({ calls: fc.array(call, { maxLength: 3 }), pure: fc.constant(false) })
const plan = fc.array(stepPlan, { minLength: 1, maxLength: 3 })
const at = fc.nat({ max: 1_000 })
const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ tag: fc.constant("args" as const), at, n: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ tag: fc.constant("kind" as const), at, kind: fc.integer({ min: 0, max: KINDS.length - 1 }) }),
  fc.record({ tag: fc.constant("insert" as const), at, call }),
  fc.record({ tag: fc.constant("delete" as const), at }),
  fc.record({ tag: fc.constant("swap" as const), at }),
  fc.record({ tag: fc.constant("pure" as const), at }),
  fc.record({ tag: fc.constant("move" as const), at }),
  fc.record({ tag: fc.constant("append-step" as const), call }),
)

/** Every call's place, as [step, index]. */
const places = (p: Plan) => p.flatMap((s, i) => s.calls.map((_, j) => [i, j] as const))

const replaceStep = (p: Plan, i: number, f: (s: StepPlan) => StepPlan): Plan => p.map((s, k) => (k === i ? f(s) : s))

/** The edited plan; an edit with nothing to act on (no call to delete) leaves the plan as it was. */
const applyEdit = (p: Plan, e: Edit): Plan => {
  const all = places(p)
  const place = all.length === 0 ? undefined : all[e.tag === "append-step" ? 0 : e.at % all.length]
  switch (e.tag) {
    case "args":
    case "kind": {
      if (place === undefined) return p
      const [i, j] = place
      return replaceStep(p, i, (s) => ({
        ...s,
        calls: s.calls.map((c, k) => (k !== j ? c : e.tag === "args" ? { ...c, n: e.n } : { ...c, kind: e.kind })),
      }))
    }
    case "insert": {
      const i = e.at % p.length
      return replaceStep(p, i, (s) => {
        const j = e.at % (s.calls.length + 1)
        return { ...s, calls: [...s.calls.slice(0, j), e.call, ...s.calls.slice(j)] }
      })
    }
    case "delete": {
      if (place === undefined) return p
      const [i, j] = place
      return replaceStep(p, i, (s) => ({ ...s, calls: s.calls.filter((_, k) => k !== j) }))
    }
    case "swap": {
      const pairs = all.filter(([i, j]) => j + 1 < (p[i]?.calls.length ?? 0))
      const pair = pairs.length === 0 ? undefined : pairs[e.at % pairs.length]
      if (pair === undefined) return p
      const [i, j] = pair
      return replaceStep(p, i, (s) => {
        const calls = [...s.calls]
        const [x, y] = [calls[j] as Call, calls[j + 1] as Call]
        calls[j] = y
        calls[j + 1] = x
        return { ...s, calls }
      })
    }
    case "pure":
      return replaceStep(p, e.at % p.length, (s) => ({ ...s, pure: true }))
    case "move": {
      // The last call of a step becomes the first of the next one: the same effects, in the same
      // order overall, but one answered in another step.
      const from = p.findIndex((s, i) => s.calls.length > 0 && i + 1 < p.length)
      if (from === -1) return p
      const moved = p[from]?.calls.at(-1) as Call
      return p.map((s, k) =>
        k === from ? { ...s, calls: s.calls.slice(0, -1) } : k === from + 1 ? { ...s, calls: [moved, ...s.calls] } : s,
      )
    }
    case "append-step":
      return [...p, { calls: [e.call], pure: false }]
  }
}

const sameCalls = (a: ReadonlyArray<Call>, b: ReadonlyArray<Call>) =>
  a.length === b.length && a.every((c, k) => c.kind === b[k]?.kind && c.n === b[k]?.n)

/** The model's verdict: what the journal of `recorded` says about a replay under `edited`. */
const expected = (recorded: Plan, edited: Plan): { readonly verdict: string; readonly step?: number } => {
  const shared = Math.min(recorded.length, edited.length)
  for (let i = 0; i < shared; i++) {
    if (!sameCalls(recorded[i]?.calls ?? [], edited[i]?.calls ?? [])) return { verdict: "nondeterministic", step: i }
  }
  if (edited.length > recorded.length) return { verdict: "overrun" }
  return { verdict: "ok" }
}

/** `p` as a run definition: each step asks its calls in order and answers their sum. */
const definitionOf = (capability: string, p: Plan) =>
  RunDefinition.make({
    capability,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: p.map((s, i) =>
      Step.make({
        name: `s${i}`,
        body: (_: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            let sum = s.pure ? Math.floor(Math.sqrt(i + 1)) * 0 : 0
            for (const c of s.calls) sum += yield* cx.perform(KINDS[c.kind] as (typeof KINDS)[0], { n: c.n })
            return sum
          }),
      }),
    ),
  })

interface Sample {
  readonly plan: Plan
  readonly edit: Edit
}

export const suite = (backend: Backend.Backend) =>
  describe("replay gate property", () => {
    // A database records each sample's run for real; memory affords many more.
    const count = Option.isNone(backend.sql) ? 150 : 40
    it.live(`${count} random plans, each with one random edit: ok exactly when no recorded answer moved`, () =>
      Effect.gen(function* () {
        const seed = Date.now() % 2 ** 31
        const samples: ReadonlyArray<Sample> = fc.sample(fc.record({ plan, edit }), { numRuns: count, seed })
        const recorded = samples.map((s, i) => definitionOf(`prop.p${i}`, s.plan))
        const byRun = new Map<RunId, number>()
        for (const [i, def] of recorded.entries()) {
          const result = yield* Support.on(Support.runtime(backend, recorded))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: i }, "test"))),
          )
          expect(result.status._tag, `sample ${i} records`).toBe("Succeeded")
          byRun.set(result.run, i)
        }
        const lines = Chunk.toReadonlyArray(
          yield* Stream.runCollect(Export.lines()).pipe(Effect.provide(backend.layer)),
        )
        const edited = samples.map((s, i) => definitionOf(`prop.p${i}`, applyEdit(s.plan, s.edit)))
        const verdicts: Array<ReplayGate.Verdict> = []
        yield* ReplayGate.check(Stream.fromIterable(lines), {
          ...Backend.replayOpener(backend),
          onVerdict: (v) => Effect.sync(() => verdicts.push(v)),
        }).pipe(Effect.provide(TestRuntime.replayLayer(edited)))
        expect(verdicts.length).toBe(count)
        const wrong = verdicts.flatMap((v) => {
          const i = byRun.get(v.run as RunId) as number
          const sample = samples[i] as Sample
          const want = expected(sample.plan, applyEdit(sample.plan, sample.edit))
          const got = {
            verdict: v.verdict,
            ...(want.step === undefined || v.verdict !== "nondeterministic" ? {} : { step: v.at?.step }),
          }
          return got.verdict === want.verdict && got.step === want.step
            ? []
            : [{ sample: i, plan: sample.plan, edit: sample.edit, want, got, verdict: v }]
        })
        expect(wrong, `seed ${seed}: samples the gate judged otherwise than the model`).toEqual([])
        // The samples exercised both sides of the property.
        const oks = verdicts.filter((v) => v.verdict === "ok").length
        expect(oks, `seed ${seed}`).toBeGreaterThan(0)
        expect(oks, `seed ${seed}`).toBeLessThan(count)
      }).pipe(Backend.asFreshTenant),
    )
  })
