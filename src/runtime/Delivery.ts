/**
 * Delivery of an inbound event (§7.9), as far as the stores go. It lives with the runtime because
 * a delivery that matches a wait will resume that run; until waits land (§7.6–§7.9), a match
 * leaves the event claimed for that run, and the redelivery pass (`redeliverClaimed`) resumes it.
 */
import { Context, Data, Effect, Layer } from "effect"
import type { InboundEvent, Subscription } from "../domain/Event.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import { EventStore } from "../services/EventStore.js"

/**
 * What delivery did: the dedup key was known (`stored` is the message of record, so a caller can
 * tell a retry of its own message from another one under the same identity), the event waits in
 * the buffer, or a wait took it.
 */
export type Outcome = Data.TaggedEnum<{
  Duplicate: { readonly stored: InboundEvent }
  Buffered: Record<never, never>
  Matched: { readonly subscription: Subscription }
}>
export const Outcome = Data.taggedEnum<Outcome>()

export class Delivery extends Context.Tag("agentplane/Delivery")<
  Delivery,
  {
    /** Buffers the event and hands it to the earliest matching wait, all or nothing: `Duplicate` for a known (source, id), `Buffered` when no wait matches, else `Matched`. */
    readonly deliver: (event: InboundEvent, at: Timestamp) => Effect.Effect<Outcome, Backend | Corrupt, Tenant>
  }
>() {}

/**
 * Store-level delivery: `accept`, which buffers and matches in one transaction; no run is resumed.
 *
 * Atomic rather than "a duplicate of a still-unclaimed event tries the match again": with two
 * transactions, a connection lost between them answered 503 while the event sat unclaimed beside
 * its waiter, and its retry was a duplicate. Re-matching on a duplicate would repair that, but
 * every honest duplicate would then pay a match, and it would have to match on the stored copy's
 * kind and keys rather than the retry's. One transaction leaves no such state to repair: after a
 * 503 either nothing was written and the retry delivers afresh, or (a commit whose answer was
 * lost) everything was, and the retry's `Duplicate` describes a delivery that completed.
 */
export const layer: Layer.Layer<Delivery, never, EventStore> = Layer.effect(
  Delivery,
  Effect.map(EventStore, (events) =>
    Delivery.of({
      deliver: (event, at) =>
        Effect.map(events.accept(event, at), (accepted) => {
          switch (accepted._tag) {
            case "Duplicate":
              return Outcome.Duplicate({ stored: accepted.stored.event })
            case "Buffered":
              return Outcome.Buffered()
            case "Matched":
              return Outcome.Matched({ subscription: accepted.subscription })
          }
        }),
    }),
  ),
)
