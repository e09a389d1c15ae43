/**
 * The QuotaError family: why an admission was refused. Quota fails closed: a store failure
 * during a check is `QuotaUnavailable`, never an admission.
 */
import { Schema } from "effect"

/** Back-pressure: the tenant is at its concurrency ceiling; retry later. */
export class TooManyRuns extends Schema.TaggedError<TooManyRuns>()("TooManyRuns", {
  tenant: Schema.String,
  running: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `tenant ${this.tenant} already has ${this.running} run(s) in flight`
  }
}

export class SpentOut extends Schema.TaggedError<SpentOut>()("SpentOut", {
  tenant: Schema.String,
  period: Schema.String,
  unit: Schema.Literal("tokens", "minor units"),
  spent: Schema.NonNegativeInt,
  limit: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `tenant ${this.tenant} spent ${this.spent} of ${this.limit} ${this.unit} in ${this.period}`
  }
}

/** An operator's emergency stop; do not retry. */
export class Halted extends Schema.TaggedError<Halted>()("Halted", {
  tenant: Schema.String,
  reason: Schema.String,
}) {
  override get message(): string {
    return `tenant ${this.tenant} is halted: ${this.reason}`
  }
}

export class QuotaUnavailable extends Schema.TaggedError<QuotaUnavailable>()("QuotaUnavailable", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `quota could not be checked, admission refused: ${this.detail}`
  }
}

export type QuotaError = TooManyRuns | SpentOut | Halted | QuotaUnavailable
