/**
 * EventStore (§5.2): the durable event buffer and the waits that claim from it. Every event is
 * stored before anyone looks for a taker, so nothing is dead-lettered on arrival.
 */
import { Context, Data, type Effect, type Option } from "effect"
import type { EffectKey } from "../domain/EffectKey.js"
import type { BufferedEvent, DeadLetter, InboundEvent, Subscription, TargetedDelivery } from "../domain/Event.js"
import type { RunId } from "../domain/Ids.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

/** What `accept` did: the dedup key was known (with the message of record), the event waits in the buffer, or a wait took it. */
export type Acceptance = Data.TaggedEnum<{
  Duplicate: { readonly stored: BufferedEvent }
  Buffered: Record<never, never>
  Matched: { readonly subscription: Subscription }
}>
export const Acceptance = Data.taggedEnum<Acceptance>()

export class EventStore extends Context.Tag("agentplane/EventStore")<
  EventStore,
  {
    /** Stores a new event, unclaimed and live with `receivedAt = at`, and returns `true`; a known dedup key (source, id) changes nothing and returns `false`. */
    readonly buffer: (event: InboundEvent, at: Timestamp) => Op<boolean>
    /** `buffer` and `matchWaiter` as one transaction, so no failure leaves the event stored but unoffered: `Matched` with the wait it claimed and elected (as `matchWaiter` does), `Buffered` when none waits, or `Duplicate` with the stored event for a known dedup key, writing nothing. */
    readonly accept: (event: InboundEvent, at: Timestamp) => Read<Acceptance>
    /** The event accepted under the dedup key (source, id) as stored, its payload `null` once erased; none when no such event was accepted. Reads only. */
    readonly accepted: (source: string, id: string) => Read<Option.Option<BufferedEvent>>
    /** Registers the wait under every key in one transaction, keeping rows already present with their first `createdAt` and election; no keys writes nothing. */
    readonly subscribe: (sub: Subscription, at: Timestamp) => Op<void>
    /** Claims for `sub.run` the oldest live event of `sub.kind` on the first key with one that is unclaimed or already the run's, never another run's; none when there is none. */
    readonly claimFor: (sub: Subscription, at: Timestamp) => Read<Option.Option<BufferedEvent>>
    /** Claims a buffered, unclaimed, live event for the earliest-registered unelected wait on its first matching key and marks that wait elected by it (no other event elects it; it stays registered and in `waiting` until `unsubscribe`, so a run whose process died before its wake is redelivered), returning it as registered; none otherwise, so a repeat yields none. */
    readonly matchWaiter: (event: InboundEvent, at: Timestamp) => Read<Option.Option<Subscription>>
    /** Delivers to one named run: `Matched` with the wait this event elected before, else its lowest-effect-key unelected wait holding a key of the event, which it marks elected; `Duplicate` for an accepted dedup key not claimed by that run, or `NotWaiting` writing nothing; never deletes a wait. */
    readonly deliverTo: (run: RunId, event: InboundEvent, at: Timestamp) => Read<TargetedDelivery>
    /** Deletes every row of (run, effect) and nulls the payload of every event claimed by `run` that none of the run's other registered waits could take (its kind, a shared key), keeping identity, claim and dead-letter fields; idempotent. */
    readonly unsubscribe: (run: RunId, effect: EffectKey) => Op<void>
    /** Nulls the payload of the event with this dedup key, keeping the row; `false` when no such event was ever accepted. */
    readonly erasePayload: (source: string, id: string) => Op<boolean>
    /** Marks dead with `reason` every unclaimed live event with `receivedAt <= olderThan` (claimed events never) and returns how many. */
    readonly sweepUnclaimed: (olderThan: Timestamp, reason: string) => Op<number>
    /** Dead events as they arrived, newest `receivedAt` first, a missing or empty reason reading `"unclaimed"`. */
    readonly deadLetters: (limit: number) => Read<ReadonlyArray<DeadLetter>>
    /** Registered waits, elected ones included, one per (run, effect) with all its keys, oldest first by earliest `createdAt`; `limit` counts waits. */
    readonly waiting: (limit: number) => Read<ReadonlyArray<Subscription>>
  }
>() {}
