/**
 * Runs (§7): how a run stands, why it waits, what it may spend, and how an effect left in doubt
 * is recovered. Pure values; the runtime in `src/runtime` drives them.
 */
import { Data, Option, Schema } from "effect"
import { InvalidBudget } from "../errors/RuntimeError.js"
import type * as Journal from "./Journal.js"
import type { Json } from "./Json.js"
import { Amount } from "./Quota.js"

/** Why a suspended run waits (§6.2 `RunSuspended.reason`). */
export type SuspendReason = typeof Journal.SuspendReason.Type

/** Which ceiling a budget refusal names (§7.3). `recorded` is the runtime's fixed cap on journal records per run. */
export const LimitLabel = Schema.Literal(
  "steps",
  "effects",
  "replans",
  "denials",
  "recorded",
  "tokens",
  "money",
  "wallclock",
)
export type LimitLabel = typeof LimitLabel.Type

/** How a run stands after an execution (§7.2). */
export type RunStatus = Data.TaggedEnum<{
  Succeeded: { readonly output: unknown }
  Failed: { readonly message: string }
  Suspended: { readonly reason: SuspendReason }
  Exhausted: { readonly limit: LimitLabel }
  Quarantined: { readonly message: string }
  Replanning: { readonly message: string }
  Cancelled: { readonly actor: string; readonly reason: string }
}>
export const RunStatus = Data.taggedEnum<RunStatus>()

const RANK: { readonly [K in RunStatus["_tag"]]: number } = {
  Succeeded: 0,
  Suspended: 1,
  Replanning: 1,
  Exhausted: 2,
  Failed: 3,
  Cancelled: 3,
  Quarantined: 4,
}

/** Among parallel siblings the worst wins: Quarantined > Failed = Cancelled > Exhausted > Suspended = Replanning; ties keep the first. */
export const worst = (a: RunStatus, b: RunStatus): RunStatus => (RANK[b._tag] > RANK[a._tag] ? b : a)

/** Whether an act reached the other side (§7.1). */
export const Disposition = Schema.Literal("did_not_happen", "in_doubt", "landed")
export type Disposition = typeof Disposition.Type

/** What recovery does with an effect left in doubt (§7.1); `RequiresOperator` is the default for anything that mutates. */
export type Recovery = Data.TaggedEnum<{
  Retry: Record<never, never>
  /** `key` derives the key the provider deduplicates by from the arguments; none: SHA-256 of the run and the first attempt's effect key, shared by every attempt and by no other run. */
  Idempotent: { readonly key: Option.Option<(args: Json) => string> }
  Reconcile: Record<never, never>
  RequiresOperator: Record<never, never>
}>
export const Recovery = Data.taggedEnum<Recovery>()

/** The stored string of a recovery (`EffectStarted.recovery`). */
export const recoveryName = (recovery: Recovery): string =>
  Recovery.$match(recovery, {
    Retry: () => "retry",
    Idempotent: () => "idempotent",
    Reconcile: () => "reconcile",
    RequiresOperator: () => "requires_operator",
  })

/** Attempts and their spacing (§7.1): doubling from `backoffMs`, each wait capped at `maxBackoffMs`, a provider's advice at `maxAdviceMs`. */
export class RetryPolicy extends Schema.Class<RetryPolicy>("RetryPolicy")({
  maxAttempts: Schema.Int.pipe(Schema.between(1, 1000)),
  backoffMs: Amount,
  maxBackoffMs: Schema.optionalWith(Amount, { default: () => 10_000 }),
  maxAdviceMs: Schema.optionalWith(Amount, { default: () => 60_000 }),
}) {}

/** One attempt, no retry: the default of every effect kind. */
export const once: RetryPolicy = new RetryPolicy({ maxAttempts: 1, backoffMs: 0 })

/** The wait before attempt `attempt + 1` after attempt `attempt` failed; `adviceMs` (Retry-After) replaces the doubling, capped. */
export const backoffAfter = (policy: RetryPolicy, attempt: number, adviceMs: Option.Option<number>): number =>
  Option.match(adviceMs, {
    onSome: (advice) => Math.min(Math.max(0, Math.trunc(advice)), policy.maxAdviceMs),
    onNone: () => Math.min(policy.backoffMs * 2 ** Math.max(0, attempt - 1), policy.maxBackoffMs),
  })

const Ceiling = Schema.OptionFromSelf(Amount)

/** A run's ceilings (§7.3); none is unlimited. Build with `budget`, which refuses the forbidden zeros. */
export class Budget extends Schema.Class<Budget>("Budget")({
  maxSteps: Ceiling,
  maxEffects: Ceiling,
  maxTokens: Ceiling,
  maxMinorUnits: Ceiling,
  maxReplans: Ceiling,
  maxWallclockSecs: Ceiling,
  maxDenials: Ceiling,
}) {}

export type BudgetInput = { readonly [K in keyof Budget]?: number }

const LABEL_OF: { readonly [K in keyof Budget]: LimitLabel } = {
  maxSteps: "steps",
  maxEffects: "effects",
  maxTokens: "tokens",
  maxMinorUnits: "money",
  maxReplans: "replans",
  maxWallclockSecs: "wallclock",
  maxDenials: "denials",
}

// A ceiling of 0 would refuse the run's first operation, which is a misconfiguration; replans and
// denials are different: 0 means "never replan" / "no denial tolerated", which is a real policy.
const ZERO_ALLOWED: ReadonlySet<keyof Budget> = new Set(["maxReplans", "maxDenials"])

/** A budget from plain ceilings; a 0 where §7.3 forbids it fails with `InvalidBudget{limit}`. */
export const budget = (input: BudgetInput): Budget => {
  for (const [field, label] of Object.entries(LABEL_OF) as ReadonlyArray<[keyof Budget, LimitLabel]>) {
    if (input[field] === 0 && !ZERO_ALLOWED.has(field)) throw new InvalidBudget({ limit: label })
  }
  const of = (field: keyof Budget) => Option.fromNullable(input[field])
  return new Budget({
    maxSteps: of("maxSteps"),
    maxEffects: of("maxEffects"),
    maxTokens: of("maxTokens"),
    maxMinorUnits: of("maxMinorUnits"),
    maxReplans: of("maxReplans"),
    maxWallclockSecs: of("maxWallclockSecs"),
    maxDenials: of("maxDenials"),
  })
}

export const unlimited: Budget = budget({})

/** The budget as journal JSON (`PlanFrozen.plan.budget`, `BudgetReadmitted.limit`): set ceilings only. */
export const budgetJson = (b: Budget): Json => {
  const out: { [key: string]: Json } = {}
  for (const field of Object.keys(LABEL_OF) as ReadonlyArray<keyof Budget>) {
    const value = b[field]
    if (Option.isSome(value)) out[field] = value.value
  }
  return out
}

/** Reads `budgetJson` back; anything else is `undefined` (the caller reports it as corrupt). */
export const budgetFromJson = (json: Json): Budget | undefined => {
  if (json === null || typeof json !== "object" || Array.isArray(json)) return undefined
  const input: { -readonly [K in keyof Budget]?: number } = {}
  for (const [field, value] of Object.entries(json)) {
    if (!(field in LABEL_OF) || typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) return undefined
    input[field as keyof Budget] = value
  }
  try {
    return budget(input)
  } catch {
    return undefined
  }
}

/** What a run has used of its budget, counted from its journal. */
export interface Usage {
  readonly steps: number
  readonly effects: number
  readonly tokens: number
  readonly minorUnits: number
  readonly wallclockSecs: number
  readonly records: number
}

/** The most records one run may journal before it is exhausted on `recorded`. */
export const MAX_RECORDS = 100_000

/**
 * The first ceiling `usage` has reached, in a fixed order. Reaching (`used >= limit`) refuses the
 * next operation, so a metered limit is passed by one operation at most.
 */
export const exhausted = (
  b: Budget,
  usage: Usage,
): Option.Option<{ readonly limit: LimitLabel; readonly used: number }> => {
  const checks: ReadonlyArray<readonly [LimitLabel, Option.Option<number>, number]> = [
    ["steps", b.maxSteps, usage.steps],
    ["effects", b.maxEffects, usage.effects],
    ["tokens", b.maxTokens, usage.tokens],
    ["money", b.maxMinorUnits, usage.minorUnits],
    ["wallclock", b.maxWallclockSecs, usage.wallclockSecs],
    ["recorded", Option.some(MAX_RECORDS), usage.records],
  ]
  for (const [limit, ceiling, used] of checks) {
    if (Option.isSome(ceiling) && used >= ceiling.value) return Option.some({ limit, used })
  }
  return Option.none()
}

/**
 * The metered limit an act that may spend up to `reserve` would pass: tokens or money whose usage
 * plus the reserve exceeds the ceiling. Reaching a ceiling exactly is allowed; `exhausted` stops
 * the next act.
 */
export const passedBy = (
  b: Budget,
  usage: { readonly tokens: number; readonly minorUnits: number },
  reserve: { readonly tokens: number; readonly minorUnits: number },
): Option.Option<{ readonly limit: LimitLabel; readonly used: number }> => {
  if (reserve.tokens > 0 && Option.isSome(b.maxTokens) && usage.tokens + reserve.tokens > b.maxTokens.value) {
    return Option.some({ limit: "tokens", used: usage.tokens })
  }
  if (
    reserve.minorUnits > 0 &&
    Option.isSome(b.maxMinorUnits) &&
    usage.minorUnits + reserve.minorUnits > b.maxMinorUnits.value
  ) {
    return Option.some({ limit: "money", used: usage.minorUnits })
  }
  return Option.none()
}

/** A value with where it came from (§7.4): the runtime refuses input without one. */
export interface Labeled<A> {
  readonly value: A
  readonly label: string
}

/** Input the caller vouches for, e.g. `trusted(order, "operator")`. */
export const labeled = <A>(value: A, label: string): Labeled<A> => ({ value, label })
