/**
 * Run definitions (§7.4): a capability name, typed input and output, the frozen plan (steps in
 * order, a nested array being a parallel group), an optional budget and admission key. Register
 * one with `register`, so any process that registered it can start, resume or replay its runs.
 */
import { Context, Effect, Layer, Option, type Schema } from "effect"
import * as Canonical from "../domain/Canonical.js"
import * as Digest from "../domain/Digest.js"
import type { Json } from "../domain/Json.js"
import * as Run from "../domain/Run.js"
import type { Encoded } from "./EffectKind.js"
import type * as Step from "./Step.js"

export type PlanEntry = Step.Any | ReadonlyArray<Step.Any>

export interface RunDefinition<I, O, R> {
  readonly capability: string
  /** The version the definition declares (§7.13); `RunAdmitted` records it with the capability. */
  readonly version: string
  readonly input: Schema.Schema<I, Encoded>
  readonly output: Schema.Schema<O, Encoded>
  readonly plan: ReadonlyArray<PlanEntry>
  /** Every step with its id: its position in the flattened plan. */
  readonly steps: ReadonlyArray<Step.Any>
  readonly budget: Run.Budget
  readonly admissionKey: Option.Option<(input: I) => string>
  readonly finish: (input: I, prior: Step.Prior) => O
  readonly _R?: () => R
}

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous registry
export type Any = RunDefinition<any, any, any>

type StepNeeds<S> = S extends Step.Step<never, unknown, unknown, infer R> ? R : never
/** What a plan's bodies and compensations require beyond the step context. */
export type PlanNeeds<P extends ReadonlyArray<PlanEntry>> = {
  [K in keyof P]: P[K] extends ReadonlyArray<infer S> ? StepNeeds<S> : StepNeeds<P[K]>
}[number]

/**
 * The version a definition declares when it names none. Decision: "1", a plain string with no
 * order or format imposed (a date, a semver, a build id all work): the runtime only ever compares
 * versions for equality, so it never has to parse one.
 */
export const DEFAULT_VERSION = "1"

export const make = <I, O, const P extends ReadonlyArray<PlanEntry>>(options: {
  readonly capability: string
  /** What this code of the definition is called (§7.13); default `DEFAULT_VERSION`. Bump it when old runs must not resume on this code. */
  readonly version?: string
  readonly input: Schema.Schema<I, Encoded>
  readonly output: Schema.Schema<O, Encoded>
  readonly plan: P
  readonly budget?: Run.Budget
  readonly admissionKey?: (input: I) => string
  /** The run's output from the finished steps; default: the last step's output. */
  readonly finish?: (input: I, prior: Step.Prior) => O
}): RunDefinition<I, O, PlanNeeds<P>> => {
  const steps = options.plan.flatMap((entry): ReadonlyArray<Step.Any> => (isGroup(entry) ? entry : [entry]))
  if (options.capability.length === 0) throw new Error("a run definition needs a capability name")
  if (options.version !== undefined && options.version.length === 0)
    throw new Error(`run ${options.capability}: an empty version`)
  if (steps.length === 0) throw new Error(`run ${options.capability}: the plan has no steps`)
  for (const entry of options.plan) {
    if (isGroup(entry) && entry.length === 0) throw new Error(`run ${options.capability}: an empty parallel group`)
  }
  const names = new Set(steps.map((s) => s.name))
  if (names.size !== steps.length) throw new Error(`run ${options.capability}: step names must be unique`)
  const last = steps[steps.length - 1] as Step.Any
  return {
    capability: options.capability,
    version: options.version ?? DEFAULT_VERSION,
    input: options.input,
    output: options.output,
    plan: options.plan,
    steps,
    budget: options.budget ?? Run.unlimited,
    admissionKey: Option.fromNullable(options.admissionKey),
    finish: options.finish ?? ((_input, prior) => prior.of(last) as O),
  }
}

export const isGroup = (entry: PlanEntry): entry is ReadonlyArray<Step.Any> => Array.isArray(entry)

/** The plan as `PlanFrozen` journals it: step names and roles in order, groups marked, the budget. */
export const frozen = (def: Any): Json => ({
  plan: def.plan.map((entry) =>
    isGroup(entry)
      ? { group: entry.map((s) => ({ name: s.name, role: s.role._tag })) }
      : { name: entry.name, role: entry.role._tag },
  ),
  budget: Run.budgetJson(def.budget),
})

/**
 * A digest of the definition's registered shape (§7.13), recorded in `RunAdmitted` beside its
 * version: SHA-256 of the canonical JSON of its capability, its frozen plan (step names, roles,
 * groups, budget) and the ASTs of its input and output schemas (`SchemaAST.toJSON`). It tells two
 * builds' shapes apart, not their code: step bodies and the functions inside a schema (filters,
 * transformations) are not in it, and an Effect upgrade that changes how an AST prints changes it.
 * Undefined where the ASTs do not print as JSON (an annotation holding a bigint, say). So it is
 * informative: the version is what a resume is pinned to. Computed once per definition.
 */
export const shapeDigest = (def: Any): string | undefined => {
  if (digests.has(def)) return digests.get(def)
  let digest: string | undefined
  try {
    const ast = (schema: Schema.Schema.Any) => JSON.parse(JSON.stringify(schema.ast)) as Json
    digest = Digest.of(
      Canonical.text({ capability: def.capability, plan: frozen(def), input: ast(def.input), output: ast(def.output) }),
    )
  } catch {
    digest = undefined
  }
  digests.set(def, digest)
  return digest
}

const digests = new WeakMap<Any, string | undefined>()

/** A registered definition with the context its bodies and acts run in. */
export interface Registered {
  readonly definition: Any
  readonly context: Context.Context<never>
}

/** Definitions by capability: how a resume in any process finds the code of a run it did not start. */
export class Registry extends Context.Tag("agentplane/RunRegistry")<
  Registry,
  {
    readonly add: (entry: Registered) => Effect.Effect<void>
    readonly lookup: (capability: string) => Effect.Effect<Option.Option<Registered>>
  }
>() {}

/** An empty registry; `register` layers fill it. */
export const layerRegistry: Layer.Layer<Registry> = Layer.sync(Registry, () => {
  const entries = new Map<string, Registered>()
  return Registry.of({
    add: (entry) =>
      Effect.suspend(() => {
        const known = entries.get(entry.definition.capability)
        // Two definitions under one name would make resume depend on which registered last.
        if (known !== undefined && known.definition !== entry.definition) {
          return Effect.dieMessage(`capability ${entry.definition.capability} is registered twice`)
        }
        entries.set(entry.definition.capability, entry)
        return Effect.void
      }),
    lookup: (capability) => Effect.sync(() => Option.fromNullable(entries.get(capability))),
  })
})

/** Registers `def` with the services its steps need, taken from the layer's context. */
export const register = <I, O, R>(def: RunDefinition<I, O, R>): Layer.Layer<never, never, Registry | R> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const registry = yield* Registry
      const context = (yield* Effect.context<R>()) as Context.Context<never>
      yield* registry.add({ definition: def, context })
    }),
  )
