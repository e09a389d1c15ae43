/**
 * Batches: one frozen plan applied to many items, each item its own run with its own outcome.
 */
import { Data, type Effect, Either, Option, Schema } from "effect"
import type { SourceError } from "../errors/SourceError.js"
import { RunId } from "./Ids.js"
import { Json } from "./Json.js"
import { Spend } from "./Quota.js"

export class Succeeded extends Schema.TaggedClass<Succeeded>()("Succeeded", {}) {}

export class Failed extends Schema.TaggedClass<Failed>()("Failed", { detail: Schema.String }) {}

export class Quarantined extends Schema.TaggedClass<Quarantined>()("Quarantined", { detail: Schema.String }) {}

export class Suspended extends Schema.TaggedClass<Suspended>()("Suspended", { detail: Schema.String }) {}

/** The item's run hit a budget ceiling; `limit` is its label (`tokens`, `steps`, …). */
export class Exhausted extends Schema.TaggedClass<Exhausted>()("Exhausted", { limit: Schema.String }) {}

/** How an item's run ended; all but Succeeded carry a detail, stored beside the outcome string. */
export const ItemOutcome = Schema.Union(Succeeded, Failed, Quarantined, Suspended, Exhausted)
export type ItemOutcome = typeof ItemOutcome.Type

/** The stored outcome strings. */
export const OutcomeTag = Schema.Literal("succeeded", "failed", "quarantined", "suspended", "exhausted")
export type OutcomeTag = typeof OutcomeTag.Type

export const tagOf = (outcome: ItemOutcome): OutcomeTag => {
  switch (outcome._tag) {
    case "Succeeded":
      return "succeeded"
    case "Failed":
      return "failed"
    case "Quarantined":
      return "quarantined"
    case "Suspended":
      return "suspended"
    case "Exhausted":
      return "exhausted"
  }
}

/** The stored detail column: none for Succeeded, the ceiling's label for Exhausted. */
export const detailOf = (outcome: ItemOutcome): Option.Option<string> => {
  switch (outcome._tag) {
    case "Succeeded":
      return Option.none()
    case "Exhausted":
      return Option.some(outcome.limit)
    default:
      return Option.some(outcome.detail)
  }
}

/** Rebuilds an outcome from its stored columns; `Left` (a `Corrupt` detail) when a detail-bearing outcome lost its detail. */
export const fromStored = (tag: OutcomeTag, detail: Option.Option<string>): Either.Either<ItemOutcome, string> => {
  if (tag === "succeeded") return Either.right(new Succeeded())
  if (Option.isNone(detail)) return Either.left(`batch item outcome '${tag}' stored without its detail`)
  const d = detail.value
  switch (tag) {
    case "failed":
      return Either.right(new Failed({ detail: d }))
    case "quarantined":
      return Either.right(new Quarantined({ detail: d }))
    case "suspended":
      return Either.right(new Suspended({ detail: d }))
    case "exhausted":
      return Either.right(new Exhausted({ limit: d }))
  }
}

/** Succeeded, failed and quarantined items are settled; suspended and exhausted ones will be resumed. */
export const isTerminal = (outcome: ItemOutcome): boolean =>
  outcome._tag === "Succeeded" || outcome._tag === "Failed" || outcome._tag === "Quarantined"

/** One item's reservation: the run reserved first, and no outcome while that run is unfinished. */
export class ItemRecord extends Schema.Class<ItemRecord>("ItemRecord")({
  key: Schema.String,
  run: RunId,
  outcome: Schema.OptionFromSelf(ItemOutcome),
  spend: Spend,
}) {}

/** Items per outcome, counted in SQL; `inFlight` is reserved without an outcome; `spend` sums every item. */
export class BatchCensus extends Schema.Class<BatchCensus>("BatchCensus")({
  succeeded: Schema.NonNegativeInt,
  failed: Schema.NonNegativeInt,
  quarantined: Schema.NonNegativeInt,
  suspended: Schema.NonNegativeInt,
  exhausted: Schema.NonNegativeInt,
  inFlight: Schema.NonNegativeInt,
  spend: Spend,
}) {}

/** Settled items: succeeded + failed + quarantined. */
export const terminal = (census: BatchCensus): number => census.succeeded + census.failed + census.quarantined

/** Computed from the census and the source, never stored. */
export type BatchStatus = Data.TaggedEnum<{
  Running: Record<never, never>
  Completed: { readonly succeeded: number; readonly failed: number; readonly quarantined: number }
}>
export const BatchStatus = Data.taggedEnum<BatchStatus>()

/** Completed with nothing failed or quarantined. */
export const everythingSettled = (status: BatchStatus): boolean =>
  status._tag === "Completed" && status.failed === 0 && status.quarantined === 0

/** One unit of work; keys are totally ordered strings (zero-padded numbers, meter ids). */
export class BatchItem extends Schema.Class<BatchItem>("BatchItem")({
  key: Schema.String,
  input: Json,
}) {}

/** Where a batch's items come from. */
export interface ItemSource {
  /** Up to `limit` items with keys strictly after `after` (none = from the start), in key order; a short page is not the end, an empty page is. */
  readonly next: (after: Option.Option<string>, limit: number) => Effect.Effect<ReadonlyArray<BatchItem>, SourceError>
}
