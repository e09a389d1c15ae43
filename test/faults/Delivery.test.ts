/**
 * A delivery cut between buffering the event and matching its waiter (issue 13): after any
 * failure of `POST /events`' delivery, the retry must end where a fault-free delivery would
 * have. On PostgreSQL the backend is killed at each statement of the delivery (see
 * test/support/Faults.ts); on SQLite, which has no backend to kill, a trigger aborts the
 * delivery's last write instead. Either way the failed delivery must leave nothing behind: an
 * event left buffered beside a waiter that still waits made the retry a duplicate, and the wait
 * was never satisfied.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { InboundEvent, Subscription } from "../../src/domain/Event.js"
import { generateRunId, StepId } from "../../src/domain/Ids.js"
import { Tenant } from "../../src/domain/Tenant.js"
import * as Time from "../../src/domain/Time.js"
import { Acceptance, EventStore } from "../../src/services/EventStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)
const [a, b] = [CorrelationKey.make("invoice", "INV-1"), CorrelationKey.make("order", "O-1")] as const

const wait = () =>
  new Subscription({
    run: generateRunId(),
    case: Option.none(),
    effect: EffectKey.make(randomBytes(32).toString("hex")),
    step: StepId.make(1),
    phase: "forward",
    kind: "payment.captured",
    correlation: [a, b],
  })

const event = new InboundEvent({
  source: "producer",
  id: "pay-1",
  kind: "payment.captured",
  correlation: [b, a],
  payload: { amount: 40 },
})

/** `POST /events`' delivery at the store: `accept`, which the runtime's Deliveries calls, buffers and matches in one transaction. */
const deliver = (e: InboundEvent) => Effect.flatMap(EventStore, (store) => store.accept(e, at(2_000)))

/** What a delivery leaves: who still waits, and who can claim the event. */
const observe = (sub: Subscription) =>
  Effect.flatMap(EventStore, (store) =>
    Effect.all([store.waiting(10), store.claimFor(new Subscription({ ...sub, run: generateRunId() }), at(3_000))]),
  )

describe("faults: delivery", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, [
      Faults.scenario(
        "deliver buffering an event and handing it to its waiting run",
        [
          Faults.after("inbound_events", "INSERT"),
          Faults.after("inbound_correlation", "INSERT"),
          // Between the two halves as they used to be: the event was committed by then. The wait
          // is marked elected, not deleted (issue 16).
          Faults.before("subscriptions", "UPDATE"),
          Faults.after("subscriptions", "UPDATE"),
          Faults.atCommit("subscriptions", "UPDATE"),
        ],
        () => {
          const sub = wait()
          return {
            setup: Effect.flatMap(EventStore, (store) => store.subscribe(sub, at(1_000))),
            run: () => deliver(event),
            observe: () => Effect.flatMap(EventStore, (store) => store.waiting(10)),
            // The run holds the event, and nobody else can take it.
            probe: () => observe(sub),
          }
        },
      ),
    ])
  })

  const sqlite = Backend.sqlite()
  layer(Option.getOrThrow(sqlite.sql).layer, { excludeTestServices: true })((it) => {
    it.effect("sqlite: a delivery aborted at its last write leaves nothing, and its retry matches the wait", () =>
      Backend.asFreshTenant(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const store = yield* EventStore
          const sub = wait()
          yield* store.subscribe(sub, at(1_000))
          const before = yield* observe(sub)
          const trigger = `fault_${randomBytes(6).toString("hex")}`
          const tenant = yield* Tenant
          yield* sql.unsafe(
            `CREATE TRIGGER ${trigger} BEFORE UPDATE ON subscriptions WHEN OLD.tenant = '${tenant}'
             BEGIN SELECT RAISE(ABORT, 'fault injected'); END`,
          )
          const failed = yield* Effect.exit(deliver(event))
          yield* sql.unsafe(`DROP TRIGGER ${trigger}`)
          assert.isTrue(Exit.isFailure(failed), "the aborted delivery must fail")
          assert.deepStrictEqual(yield* observe(sub), before, "the failed delivery left the event behind")
          const retried = yield* deliver(event)
          assert.deepStrictEqual(retried, Acceptance.Matched({ subscription: sub }))
          // Elected, the wait stays listed until the engine unsubscribes it (issue 16).
          assert.deepStrictEqual(yield* store.waiting(10), [sub])
        }),
      ),
    )
  })
})
