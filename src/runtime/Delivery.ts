/**
 * Delivery of an inbound event (§7.9), as far as the stores go. It lives with the runtime because
 * a delivery that matches a wait will resume that run; until waits land (§7.6–§7.9), a match
 * leaves the event claimed for that run, and the redelivery pass (`redeliverClaimed`) resumes it.
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import type { InboundEvent, Subscription } from "../domain/Event.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import { EventStore } from "../services/EventStore.js"

/** What delivery did: the dedup key was known, the event waits in the buffer, or a wait took it. */
export type Outcome = Data.TaggedEnum<{
  Duplicate: Record<never, never>
  Buffered: Record<never, never>
  Matched: { readonly subscription: Subscription }
}>
export const Outcome = Data.taggedEnum<Outcome>()

export class Delivery extends Context.Tag("agentplane/Delivery")<
  Delivery,
  {
    /** Buffers the event first, then hands it to the earliest matching wait: `Duplicate` for a known (source, id), `Buffered` when no wait matches, else `Matched`. */
    readonly deliver: (event: InboundEvent, at: Timestamp) => Effect.Effect<Outcome, Backend | Corrupt, Tenant>
  }
>() {}

/** Store-level delivery: `buffer`, then `matchWaiter`; no run is resumed. */
export const layer: Layer.Layer<Delivery, never, EventStore> = Layer.effect(
  Delivery,
  Effect.map(EventStore, (events) =>
    Delivery.of({
      deliver: (event, at) =>
        Effect.gen(function* () {
          // Buffer before seeking a waiter, so an event that finds none is kept for a later wait.
          if (!(yield* events.buffer(event, at))) return Outcome.Duplicate()
          return Option.match(yield* events.matchWaiter(event, at), {
            onNone: () => Outcome.Buffered(),
            onSome: (subscription) => Outcome.Matched({ subscription }),
          })
        }),
    }),
  ),
)
