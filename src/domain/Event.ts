/**
 * Inbound events, the waits that take them, and the dead letters a sweep leaves behind.
 */
import { Data, Schema } from "effect"
import { Keys } from "./CorrelationKey.js"
import { EffectKey } from "./EffectKey.js"
import { CaseId, RunId, StepId } from "./Ids.js"
import { Json } from "./Json.js"
import { MAX_NAME_BYTES } from "./Limits.js"
import { Phase } from "./Phase.js"
import * as Text from "./Text.js"
import { Timestamp } from "./Time.js"

/**
 * A message from outside; `id` is unique only within `source`. Every string is well-formed text
 * within `Limits` and the keys are at most `Limits.MAX_KEYS`: the constructor refuses the rest,
 * so a library caller, the memory layer and each database all see the same refusal.
 */
export class InboundEvent extends Schema.Class<InboundEvent>("InboundEvent")({
  /** Who sent it (`agentplane://worklist`, a webhook's name, …). */
  source: Text.bounded(MAX_NAME_BYTES),
  /** The producer's id, unique only within `source`. */
  id: Text.bounded(MAX_NAME_BYTES),
  kind: Text.bounded(MAX_NAME_BYTES),
  correlation: Keys,
  payload: Json,
}) {}

/** U+001F (unit separator) between source and id in a dedup key. */
export const DEDUP_SEPARATOR = "\u001F"

/**
 * The one definition of message identity: source, U+001F, id. An id alone would merge two
 * producers' messages silently, and the second would look like a retry of the first.
 */
export const dedupKeyOf = (source: string, id: string): string => `${source}${DEDUP_SEPARATOR}${id}`

export const dedupKey = (event: InboundEvent): string => dedupKeyOf(event.source, event.id)

/** An accepted event and the instant it was accepted. */
export class BufferedEvent extends Schema.Class<BufferedEvent>("BufferedEvent")({
  event: InboundEvent,
  receivedAt: Timestamp,
}) {}

/** What a dead letter's reason reads when the sweep stored none. */
export const UNCLAIMED = "unclaimed"

/** An event no wait claimed before a sweep retired it; its payload reads `null` once erased. */
export class DeadLetter extends Schema.Class<DeadLetter>("DeadLetter")({
  event: InboundEvent,
  receivedAt: Timestamp,
  reason: Schema.String,
}) {}

/** A durable wait on an event kind and any of its keys; delivery records the outcome of `effect`. */
export class Subscription extends Schema.Class<Subscription>("Subscription")({
  run: RunId,
  case: Schema.OptionFromSelf(CaseId),
  effect: EffectKey,
  step: StepId,
  phase: Phase,
  kind: Text.bounded(MAX_NAME_BYTES),
  correlation: Keys,
}) {}

/**
 * What `deliverTo` did: the event now belongs, durably, to that wait; the dedup key was already
 * accepted; or the named run has no matching wait and nothing was written.
 */
export type TargetedDelivery = Data.TaggedEnum<{
  Matched: { readonly subscription: Subscription }
  Duplicate: Record<never, never>
  NotWaiting: Record<never, never>
}>
export const TargetedDelivery = Data.taggedEnum<TargetedDelivery>()
