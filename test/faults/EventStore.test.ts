/**
 * Fault injection on the EventStore's multi-statement writes, PostgreSQL only (the cut is a
 * trigger that terminates the backend; see test/support/Faults.ts): no event or wait reachable by
 * some of its keys only, no claimed event whose waiter is still live, no half-accepted delivery.
 */
import { randomBytes } from "node:crypto"
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { InboundEvent, Subscription } from "../../src/domain/Event.js"
import { generateRunId, type RunId, StepId } from "../../src/domain/Ids.js"
import * as Time from "../../src/domain/Time.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)
const [a, b, c] = [CorrelationKey.make("a", "1"), CorrelationKey.make("b", "2"), CorrelationKey.make("c", "3")] as const

const event = (id: string, correlation: ReadonlyArray<CorrelationKey.CorrelationKey>) =>
  new InboundEvent({ source: "mail", id, kind: "reply", correlation, payload: { id } })

const wait = (correlation: ReadonlyArray<CorrelationKey.CorrelationKey>, run: RunId = generateRunId()) =>
  new Subscription({
    run,
    case: Option.none(),
    effect: EffectKey.make(randomBytes(32).toString("hex")),
    step: StepId.make(3),
    phase: "forward",
    kind: "reply",
    correlation,
  })

const waiting = Effect.flatMap(EventStore, (store) => store.waiting(10))

/** A wait on one key only, which claims whatever event that key reaches. */
const claimBy = (key: CorrelationKey.CorrelationKey) =>
  Effect.flatMap(EventStore, (store) => store.claimFor(wait([key]), at(5_000)))

const scenarios = [
  Faults.scenario(
    "buffer writing an event with three keys",
    [
      Faults.before("inbound_events", "INSERT"),
      Faults.after("inbound_events", "INSERT"),
      Faults.before("inbound_correlation", "INSERT", "NEW.namespace = 'b'"),
      Faults.after("inbound_correlation", "INSERT"),
      Faults.atCommit("inbound_correlation", "INSERT"),
    ],
    () => {
      const e = event("m-1", [a, b, c])
      return {
        setup: Effect.void,
        run: () => Effect.flatMap(EventStore, (store) => store.buffer(e, at(1_000))),
        observe: () => waiting,
        // Reachable by its last key, with every key it was buffered with.
        probe: () => claimBy(c),
      }
    },
  ),
  Faults.scenario(
    "subscribe registering a wait on three keys",
    [
      Faults.before("subscriptions", "INSERT"),
      Faults.before("subscriptions", "INSERT", "NEW.namespace = 'b'"),
      Faults.before("subscriptions", "INSERT", "NEW.namespace = 'c'"),
      Faults.after("subscriptions", "INSERT"),
      Faults.atCommit("subscriptions", "INSERT"),
    ],
    () => {
      const sub = wait([a, b, c])
      return {
        setup: Effect.void,
        run: () => Effect.flatMap(EventStore, (store) => store.subscribe(sub, at(1_000))),
        observe: () => waiting,
        // Reachable by its last key, and answered with every key.
        probe: () =>
          Effect.flatMap(EventStore, (store) =>
            Effect.zipRight(
              store.buffer(event("m-9", [c]), at(2_000)),
              store.matchWaiter(event("m-9", [c]), at(2_000)),
            ),
          ),
      }
    },
  ),
  Faults.scenario(
    "matchWaiter claiming an event and electing its wait",
    [
      Faults.before("inbound_events", "UPDATE"),
      Faults.after("inbound_events", "UPDATE"),
      // The wait is marked elected row by row (issue 16), not deleted.
      Faults.before("subscriptions", "UPDATE"),
      Faults.before("subscriptions", "UPDATE", "OLD.namespace = 'b'"),
      Faults.after("subscriptions", "UPDATE"),
      Faults.atCommit("subscriptions", "UPDATE"),
    ],
    () => {
      const sub = wait([a, b])
      const e = event("m-1", [b])
      return {
        setup: Effect.flatMap(EventStore, (store) =>
          Effect.zipRight(store.subscribe(sub, at(1_000)), store.buffer(e, at(1_500))),
        ),
        run: () => Effect.flatMap(EventStore, (store) => store.matchWaiter(e, at(2_000))),
        observe: () => waiting,
        // The event is the matched run's, and nobody else's.
        probe: () =>
          Effect.flatMap(EventStore, (store) =>
            Effect.all([store.claimFor(wait([b]), at(3_000)), store.claimFor(wait([b], sub.run), at(3_000))]),
          ),
      }
    },
  ),
  Faults.scenario(
    "deliverTo accepting a reply with three keys for a waiting run",
    [
      Faults.before("inbound_events", "INSERT"),
      Faults.after("inbound_events", "INSERT"),
      Faults.before("inbound_correlation", "INSERT", "NEW.namespace = 'b'"),
      Faults.after("inbound_correlation", "INSERT"),
      // Its last write marks the wait elected (issue 16).
      Faults.before("subscriptions", "UPDATE", "OLD.namespace = 'b'"),
      Faults.atCommit("subscriptions", "UPDATE"),
    ],
    () => {
      const run = generateRunId()
      const sub = wait([a, b], run)
      const e = event("m-1", [a, b, c])
      return {
        setup: Effect.flatMap(EventStore, (store) => store.subscribe(sub, at(1_000))),
        run: () => Effect.flatMap(EventStore, (store) => store.deliverTo(run, e, at(2_000))),
        observe: () => waiting,
        // Claimed by the run from the start: its own wait gets it back, a stranger's does not.
        probe: () =>
          Effect.flatMap(EventStore, (store) =>
            Effect.all([store.claimFor(wait([c]), at(3_000)), store.claimFor(wait([c], run), at(3_000))]),
          ),
      }
    },
  ),
  Faults.scenario(
    "unsubscribe retiring a wait and its delivered payload",
    [
      Faults.before("subscriptions", "DELETE"),
      Faults.after("subscriptions", "DELETE"),
      Faults.before("inbound_events", "UPDATE"),
      Faults.after("inbound_events", "UPDATE"),
      Faults.atCommit("inbound_events", "UPDATE"),
    ],
    () => {
      const run = generateRunId()
      const sub = wait([a, b], run)
      return {
        setup: Effect.flatMap(EventStore, (store) =>
          Effect.zipRight(store.subscribe(sub, at(1_000)), store.deliverTo(run, event("m-1", [a]), at(2_000))),
        ),
        run: () => Effect.flatMap(EventStore, (store) => store.unsubscribe(run, sub.effect)),
        observe: () => waiting,
        probe: () => Effect.flatMap(EventStore, (store) => store.claimFor(wait([a], run), at(3_000))),
      }
    },
  ),
  Faults.scenario(
    "claimFor taking a buffered event",
    [
      Faults.before("inbound_events", "UPDATE"),
      Faults.after("inbound_events", "UPDATE"),
      Faults.atCommit("inbound_events", "UPDATE"),
    ],
    () => {
      const sub = wait([b])
      return {
        setup: Effect.flatMap(EventStore, (store) => store.buffer(event("m-1", [a, b]), at(1_000))),
        run: () => Effect.flatMap(EventStore, (store) => store.claimFor(sub, at(2_000))),
        observe: () => waiting,
        probe: () => claimBy(a),
      }
    },
  ),
]

describe("faults: EventStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, scenarios)
  })
})
