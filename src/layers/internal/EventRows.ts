/**
 * The rows EventStoreSql reads, and the records it builds from them: the decoding half of the
 * store, kept apart so the store's file holds its verbs.
 */
import { Effect, Either, Option, Schema } from "effect"
import * as CorrelationKey from "../../domain/CorrelationKey.js"
import { EffectKey } from "../../domain/EffectKey.js"
import { InboundEvent, Subscription } from "../../domain/Event.js"
import { CaseId, RunId, StepId } from "../../domain/Ids.js"
import * as Json from "../../domain/Json.js"
import { Phase } from "../../domain/Phase.js"
import * as Time from "../../domain/Time.js"
import { Int8, JsonText } from "./Columns.js"
export const Instant = Schema.compose(Int8, Time.Timestamp)

// The row schemas check each field against the schema the domain class holds for it, so the
// records below are built from decoded rows without the classes validating them a second time
// (that pass cost as much as the rest of the mapping).
const Namespace = CorrelationKey.CorrelationKey.fields.namespace
const KeyValue = CorrelationKey.CorrelationKey.fields.value

export const EventKeyRow = Schema.Struct({ event_id: Schema.String, namespace: Namespace, value: KeyValue })
export const EventRow = Schema.Struct({
  event_id: Schema.String,
  source: InboundEvent.fields.source,
  bare_id: InboundEvent.fields.id,
  kind: InboundEvent.fields.kind,
  payload: JsonText,
  received_at: Instant,
})
export const DeadRow = Schema.Struct({ ...EventRow.fields, dead_reason: Schema.NullOr(Schema.String) })
export const ClaimRow = Schema.Struct({ claimed_by: Schema.NullOr(Schema.String) })
export const WaitIdRow = Schema.Struct({ run_id: RunId, effect_key: EffectKey })
export const WaitAgeRow = Schema.Struct({ run_id: RunId, effect_key: EffectKey, first: Instant })
export const SubscriptionRow = Schema.Struct({
  run_id: RunId,
  effect_key: EffectKey,
  case_id: Schema.NullOr(CaseId),
  step: Schema.compose(Int8, StepId),
  phase: Phase,
  event_kind: Subscription.fields.kind,
  namespace: Namespace,
  value: KeyValue,
  created_at: Instant,
  elected_event: Schema.NullOr(Schema.String),
})

/** A key from a decoded row (see above); how many keys a record holds is what its writer was allowed. */
export const keyOf = (row: { readonly namespace: string; readonly value: string }) =>
  new CorrelationKey.CorrelationKey({ namespace: row.namespace, value: row.value }, true)

export const toEvent = (row: typeof EventRow.Type, correlation: ReadonlyArray<CorrelationKey.CorrelationKey>) =>
  new InboundEvent({ source: row.source, id: row.bare_id, kind: row.kind, correlation, payload: row.payload }, true)

/**
 * One wait from its rows. The earliest-registered row describes it (a later `subscribe` of the
 * same (run, effect) only adds keys); the keys come ordered by (namespace, value) by code point.
 */
export const toSubscription = (
  first: typeof SubscriptionRow.Type,
  group: ReadonlyArray<typeof SubscriptionRow.Type>,
): Subscription => {
  if (group.length === 1) return subscriptionOf(first, [keyOf(first)])
  const keyed = group.map((row) => ({ row, key: keyOf(row) }))
  // The earliest row describes the wait; a tie on createdAt breaks on the key, so the answer
  // never depends on the order the database returned the rows in.
  const earlier = (a: (typeof keyed)[number], b: (typeof keyed)[number]) =>
    b.row.created_at < a.row.created_at ||
    (b.row.created_at === a.row.created_at && CorrelationKey.order(b.key, a.key) < 0)
  const earliest = keyed.reduce((a, b) => (earlier(a, b) ? b : a), { row: first, key: keyOf(first) }).row
  return subscriptionOf(earliest, keyed.map((k) => k.key).sort(CorrelationKey.order))
}

const subscriptionOf = (row: typeof SubscriptionRow.Type, correlation: ReadonlyArray<CorrelationKey.CorrelationKey>) =>
  new Subscription(
    {
      run: row.run_id,
      case: Option.fromNullable(row.case_id),
      effect: row.effect_key,
      step: row.step,
      phase: row.phase,
      kind: row.event_kind,
      correlation,
    },
    true,
  )

/** JSON text for a payload; a value with no JSON form (NaN, undefined) is a caller's bug, not data to store. */
export const encodeJson = (value: Json.Json) =>
  Either.match(Json.stringify(value), {
    onLeft: (detail) => Effect.dieMessage(`event payload must be JSON: ${detail}`),
    onRight: Effect.succeed,
  })
