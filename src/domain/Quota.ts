/**
 * Per-tenant quotas: spend, its accounting periods, and the pure admission rule on spend.
 */
import { Either, Option, Schema } from "effect"
import { SpentOut } from "../errors/QuotaError.js"
import type { TenantId } from "./Tenant.js"
import type { Timestamp } from "./Time.js"

/** A non-negative safe integer: every count and amount agentplane stores. */
export const Amount = Schema.NonNegativeInt.pipe(
  Schema.filter((n) => Number.isSafeInteger(n), { message: () => "an amount must be a safe integer" }),
)

/** Tokens and money (in the currency's minor units) consumed. */
export class Spend extends Schema.Class<Spend>("Spend")({
  tokens: Amount,
  minorUnits: Amount,
}) {}

export const ZERO: Spend = new Spend({ tokens: 0, minorUnits: 0 })

// Two safe integers sum to at most 2^54 − 2, which a double still orders correctly, so `min`
// against MAX_SAFE_INTEGER saturates exactly.
const saturatingAdd = (a: number, b: number): number => Math.min(Number.MAX_SAFE_INTEGER, a + b)

// Sums and differences of amounts, saturated and floored, are amounts: the results are built
// without the class's validation, which compiles a parser per call (a run adds spends six times).

/** Sums each unit, saturating at `Number.MAX_SAFE_INTEGER`. */
export const add = (a: Spend, b: Spend): Spend =>
  new Spend({ tokens: saturatingAdd(a.tokens, b.tokens), minorUnits: saturatingAdd(a.minorUnits, b.minorUnits) }, true)

/** A refund: `a − b` per unit, floored at 0, so spend never goes negative. */
export const subtract = (a: Spend, b: Spend): Spend =>
  new Spend({ tokens: Math.max(0, a.tokens - b.tokens), minorUnits: Math.max(0, a.minorUnits - b.minorUnits) }, true)

/** The span spend is accrued over; its key is the UTC date of the instant. */
export const Period = Schema.Literal("monthly", "daily")
export type Period = typeof Period.Type

export const DEFAULT_PERIOD: Period = "monthly"

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/** `YYYY-MM` (monthly) or `YYYY-MM-DD` (daily) of the UTC date `at` falls on; keys sort in time order for years 0–9999. */
export const periodKey = (period: Period, at: Timestamp): string => {
  const date = new Date(at * 1000)
  const month = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1, 2)}`
  return period === "monthly" ? month : `${month}-${pad(date.getUTCDate(), 2)}`
}

/** A tenant's ceilings, each none for unlimited, and the period spend is counted over. */
export class TenantQuota extends Schema.Class<TenantQuota>("TenantQuota")({
  maxConcurrentRuns: Schema.OptionFromSelf(Amount),
  maxTokensPerPeriod: Schema.OptionFromSelf(Amount),
  maxMinorUnitsPerPeriod: Schema.OptionFromSelf(Amount),
  period: Period,
}) {}

export const unlimited: TenantQuota = new TenantQuota({
  maxConcurrentRuns: Option.none(),
  maxTokensPerPeriod: Option.none(),
  maxMinorUnitsPerPeriod: Option.none(),
  period: DEFAULT_PERIOD,
})

/** Either spend ceiling is set, so admission must read the period's spend. */
export const boundsSpend = (quota: TenantQuota): boolean =>
  Option.isSome(quota.maxTokensPerPeriod) || Option.isSome(quota.maxMinorUnitsPerPeriod)

/** No ceiling of any kind is set. */
export const isUnlimited = (quota: TenantQuota): boolean =>
  Option.isNone(quota.maxConcurrentRuns) && !boundsSpend(quota)

/**
 * The spend rule of admission, shared by every caller: tokens are checked first, then minor
 * units, and reaching a limit (`spent >= limit`) refuses, since the next run would pass it.
 */
export const checkSpend = (
  tenant: TenantId,
  period: string,
  quota: TenantQuota,
  spent: Spend,
): Either.Either<void, SpentOut> => {
  const over = (unit: "tokens" | "minor units", used: number, ceiling: Option.Option<number>) =>
    Option.filter(ceiling, (limit) => used >= limit).pipe(
      Option.map((limit) => new SpentOut({ tenant, period, unit, spent: used, limit })),
    )
  return Option.match(
    Option.orElse(over("tokens", spent.tokens, quota.maxTokensPerPeriod), () =>
      over("minor units", spent.minorUnits, quota.maxMinorUnitsPerPeriod),
    ),
    { onNone: () => Either.void, onSome: Either.left },
  )
}
