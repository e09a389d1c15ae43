/**
 * What a model call costs (§6.2 `EffectDone.spend`): tokens from the provider's usage report, and
 * minor units from a price per million tokens the operator configures per model. A model with no
 * price is metered in tokens only; `Model.layer` says so in the log once, when it is built.
 */
import type { Response } from "@effect/ai"
import { Option, Schema } from "effect"
import { Spend } from "../domain/Quota.js"

/** Minor units (e.g. cents) per million input and output tokens. */
export class Price extends Schema.Class<Price>("Price")({
  inputMinorPerMillion: Schema.NonNegative,
  outputMinorPerMillion: Schema.NonNegative,
}) {}

/** Prices by model id, as the operator configures them. */
export type PriceTable = Readonly<Record<string, Price>>

/** The token counts a finish part reports; a provider that leaves one out is counted as 0 for it. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly totalTokens: number
}

/**
 * The usage of an encoded response: the `finish` part's report. Decision: when the provider gives
 * a total, the total is what is metered (it includes reasoning tokens some providers bill apart);
 * otherwise input plus output.
 */
export const usageOf = (parts: ReadonlyArray<Response.PartEncoded>): Usage => {
  let inputTokens = 0
  let outputTokens = 0
  let total: number | undefined
  for (const part of parts) {
    if (part.type !== "finish") continue
    inputTokens += count(part.usage.inputTokens)
    outputTokens += count(part.usage.outputTokens)
    if (part.usage.totalTokens !== undefined) total = (total ?? 0) + count(part.usage.totalTokens)
  }
  return { inputTokens, outputTokens, totalTokens: total ?? inputTokens + outputTokens }
}

/** The spend of one call: tokens always; minor units rounded up, so a priced call is never free. */
export const spendOf = (usage: Usage, price: Option.Option<Price>): Spend =>
  new Spend({
    tokens: usage.totalTokens,
    minorUnits: Option.match(price, {
      onNone: () => 0,
      onSome: (p) =>
        Math.ceil((usage.inputTokens * p.inputMinorPerMillion + usage.outputTokens * p.outputMinorPerMillion) / 1e6),
    }),
  })

const count = (n: number | undefined): number => (n !== undefined && Number.isFinite(n) && n > 0 ? Math.trunc(n) : 0)
