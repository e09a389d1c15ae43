/**
 * EventStore operations: an event accepted and matched to the wait that registered for it in one
 * transaction (`accept`, what the HTTP inbound path calls), and a wait claiming a buffered event
 * (`claimFor`). Each raw mirror is the statement sequence `EventStoreSql` sends.
 */
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { dedupKey, InboundEvent, Subscription } from "../../src/domain/Event.js"
import { StepId } from "../../src/domain/Ids.js"
import { EventStore } from "../../src/services/EventStore.js"
import { effectKey, expect, NOW, type Op, runId } from "../Op.js"
import { insertRows, pick, type Raw } from "../Raw.js"

const INSERT_EVENT = `INSERT INTO inbound_events (tenant, event_id, source, bare_id, kind, payload, received_at, claimed_by, claimed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (tenant, event_id) DO NOTHING RETURNING event_id`
const INSERT_EVENT_KEYS = `INSERT INTO inbound_correlation (tenant, event_id, namespace, value) VALUES ($1, $2, $3, $4)`
// `accept`'s first read: a known dedup key is answered as a duplicate.
const STORED_EVENT = `SELECT event_id, source, bare_id, kind, payload, received_at FROM inbound_events WHERE tenant = $1 AND event_id = $2`
// The earliest wait on the key that no event has elected yet (EventStoreSql `electWait`).
const ELECT = `SELECT s.run_id, s.effect_key FROM subscriptions s WHERE s.tenant = $1 AND s.event_kind = $2 AND s.namespace = $3 AND s.value = $4 AND NOT EXISTS (SELECT 1 FROM subscriptions x WHERE x.tenant = s.tenant AND x.run_id = s.run_id AND x.effect_key = s.effect_key AND x.elected_event IS NOT NULL) ORDER BY s.created_at, s.run_id, s.effect_key LIMIT 1`
const WAIT_COLUMNS = "run_id, effect_key, case_id, step, phase, event_kind, namespace, value, created_at, elected_event"
const LOCK_WAIT = `SELECT ${WAIT_COLUMNS} FROM subscriptions WHERE tenant = $1 AND run_id = $2 AND effect_key = $3 ORDER BY namespace, value`
// The wait is kept, marked elected by the event, until its answer is durable (issue 16).
const ELECT_WAIT = `UPDATE subscriptions SET elected_event = $1 WHERE tenant = $2 AND run_id = $3 AND effect_key = $4 RETURNING ${WAIT_COLUMNS}`
const CANDIDATES = `SELECT e.event_id FROM inbound_events e JOIN inbound_correlation c ON c.tenant = e.tenant AND c.event_id = e.event_id WHERE e.tenant = $4 AND e.kind = $5 AND c.namespace = $6 AND c.value = $7 AND (e.claimed_by IS NULL OR e.claimed_by = $8) AND NOT e.dead ORDER BY e.received_at, e.event_id LIMIT 1`
const claimFor = (lock: string) =>
  `UPDATE inbound_events SET claimed_by = $1, claimed_at = $2 WHERE tenant = $3 AND event_id = (${CANDIDATES}${lock}) AND (claimed_by IS NULL OR claimed_by = $9) AND NOT dead RETURNING event_id, source, bare_id, kind, payload, received_at`
const KEYS_OF = "SELECT event_id, namespace, value FROM inbound_correlation WHERE tenant = $1 AND event_id = $2"
// pg: the key lock claimFor shares with accept (EventStoreSql `lockKeys`); sqlite's write lock serialises them.
const KEY_LOCK = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

export const accept: Op = {
  name: "accept (buffer + matchWaiter)",
  ops: 2000,
  make: (cell) => {
    const events = Array.from({ length: cell.count }, (_, i) => event(`m-${i}`))
    return {
      // One registered wait per operation, on the key its event will carry.
      seed: (raw) => seedWaits(raw, cell.tenant, cell.count),
      store: (i) =>
        Effect.flatMap(EventStore, (store) => store.accept(at(events, i), NOW)).pipe(
          Effect.map((a) => expect(a._tag === "Matched", "accept matched no wait")),
        ),
      raw: async (raw, i) => {
        const e = at(events, i)
        const id = dedupKey(e)
        const k = at(e.correlation, 0)
        await raw.tx(async (q) => {
          const known = await q(pick(raw, STORED_EVENT), [cell.tenant, id], true)
          expect(known.length === 0, "raw accept found the event known")
          if (raw.dialect === "pg")
            await q(KEY_LOCK, [`${cell.tenant}\u001f${e.kind}\u001f${k.namespace}\u001f${k.value}`], true)
          const [picked] = await q(pick(raw, ELECT), [cell.tenant, e.kind, k.namespace, k.value], true)
          expect(picked !== undefined, "raw elect found no wait")
          const wait = [cell.tenant, picked?.run_id, picked?.effect_key]
          const rows = await q(pick(raw, `${LOCK_WAIT} FOR UPDATE`, LOCK_WAIT), wait, true)
          expect(rows.length > 0, "raw lock found the wait gone")
          const payload = JSON.stringify(e.payload)
          const inserted = await q(
            pick(raw, INSERT_EVENT),
            [cell.tenant, id, e.source, e.id, e.kind, payload, NOW, picked?.run_id, NOW],
            true,
          )
          expect(inserted.length === 1, "raw accept refused a new event")
          await q(pick(raw, INSERT_EVENT_KEYS), [cell.tenant, id, k.namespace, k.value], true)
          await q(pick(raw, ELECT_WAIT), [id, ...wait], true)
        })
      },
    }
  },
}

export const claimForOp: Op = {
  name: "claimFor",
  ops: 3000,
  make: (cell) => {
    const subs = Array.from(
      { length: cell.count },
      (_, i) =>
        new Subscription({
          run: runId(i),
          case: Option.none(),
          effect: effectKey(i),
          step: StepId.make(0),
          phase: "forward",
          kind: "paid",
          correlation: [CorrelationKey.make("order", `c-${i}`)],
        }),
    )
    return {
      // One buffered event per operation, carrying the key its wait will claim by.
      seed: (raw) => seedEvents(raw, cell.tenant, cell.count),
      store: (i) =>
        Effect.flatMap(EventStore, (s) => s.claimFor(at(subs, i), NOW)).pipe(
          Effect.map((found) => expect(Option.isSome(found), "claimFor claimed nothing")),
        ),
      raw: async (raw, i) => {
        const sub = at(subs, i)
        const k = at(sub.correlation, 0)
        await raw.tx(async (q) => {
          if (raw.dialect === "pg")
            await q(KEY_LOCK, [`${cell.tenant}\u001f${sub.kind}\u001f${k.namespace}\u001f${k.value}`], true)
          const text = pick(raw, claimFor(" FOR UPDATE OF e SKIP LOCKED"), claimFor(""))
          const claimed = await q(text, [
            sub.run,
            NOW,
            cell.tenant,
            cell.tenant,
            sub.kind,
            k.namespace,
            k.value,
            sub.run,
            sub.run,
          ])
          const row = claimed[0]
          expect(row !== undefined, "raw claimFor claimed nothing")
          await q(pick(raw, KEYS_OF), [cell.tenant, row?.event_id], true)
        })
      },
    }
  },
}

// internal

const event = (value: string) =>
  new InboundEvent({
    source: "bench",
    id: value,
    kind: "paid",
    correlation: [CorrelationKey.make("order", value)],
    payload: { amount: 100, currency: "EUR" },
  })

const at = <A>(items: ReadonlyArray<A>, i: number): A => {
  const item = items[i]
  if (item === undefined) throw new Error(`no input for operation ${i}`)
  return item
}

const seedWaits = (raw: Raw, tenant: string, n: number) =>
  insertRows(
    raw,
    "subscriptions",
    ["tenant", "run_id", "effect_key", "case_id", "step", "phase", "event_kind", "namespace", "value", "created_at"],
    Array.from({ length: n }, (_, i) => [
      tenant,
      runId(i),
      effectKey(i),
      null,
      0,
      "forward",
      "paid",
      "order",
      `m-${i}`,
      NOW,
    ]),
  )

const seedEvents = async (raw: Raw, tenant: string, n: number) => {
  const ids = Array.from({ length: n }, (_, i) => i)
  await insertRows(
    raw,
    "inbound_events",
    ["tenant", "event_id", "source", "bare_id", "kind", "payload", "received_at"],
    ids.map((i) => [tenant, dedupKey(event(`c-${i}`)), "bench", `c-${i}`, "paid", "{}", NOW]),
  )
  await insertRows(
    raw,
    "inbound_correlation",
    ["tenant", "event_id", "namespace", "value"],
    ids.map((i) => [tenant, dedupKey(event(`c-${i}`)), "order", `c-${i}`]),
  )
}
