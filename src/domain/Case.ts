/**
 * Cases: long-lived matters found by business keys and worked by many short runs.
 */
import { Data, Option, Schema } from "effect"
import { CorrelationKey } from "./CorrelationKey.js"
import { CaseId, CaseVersion, RunId } from "./Ids.js"
import { Json } from "./Json.js"
import { Timestamp } from "./Time.js"

export const CaseStatus = Schema.Literal("open", "awaiting_external", "awaiting_human", "escalated", "closed")
export type CaseStatus = typeof CaseStatus.Type

export class Case extends Schema.Class<Case>("Case")({
  id: CaseId,
  /** An opaque domain string (`claim`, `invoice-dispute`, …). */
  kind: Schema.String,
  status: CaseStatus,
  /** Every key the case ever claimed, released ones included, by (namespace, value). */
  correlation: Schema.Array(CorrelationKey),
  state: Json,
  version: CaseVersion,
  openedAt: Timestamp,
  /** Runs in attachment order. */
  runs: Schema.Array(RunId),
}) {}

/** What `correlateOrOpen` did: opened a new case, or attached to the open case holding a key. */
export type Correlation = Data.TaggedEnum<{
  Opened: { readonly case: CaseId }
  Attached: { readonly case: CaseId }
}>
export const Correlation = Data.taggedEnum<Correlation>()

export const isNew = (c: Correlation): boolean => c._tag === "Opened"

/** The case layer's gauges, counted in SQL. */
export class CaseCensus extends Schema.Class<CaseCensus>("CaseCensus")({
  /** Cases not closed. */
  open: Schema.NonNegativeInt,
  /** Age of the oldest case not closed; none when there is none. */
  oldestAgeSecs: Schema.OptionFromNullOr(Schema.NonNegativeInt),
  /** Pending or warned deadlines whose due instant has passed (a warning alone does not count). */
  due: Schema.NonNegativeInt,
}) {}

export const emptyCensus: CaseCensus = new CaseCensus({ open: 0, oldestAgeSecs: Option.none(), due: 0 })
