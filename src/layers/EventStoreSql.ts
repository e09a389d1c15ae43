/**
 * EventStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Every verb that reads
 * and then writes runs in `Dialect.write`; PostgreSQL settles its races with row locks inside it,
 * SQLite with the write lock `BEGIN IMMEDIATE` takes. Only `claimFor`'s pick differs in text.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Option } from "effect"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import type { EffectKey } from "../domain/EffectKey.js"
import {
  BufferedEvent,
  DeadLetter,
  dedupKey,
  dedupKeyOf,
  type InboundEvent,
  type Subscription,
  TargetedDelivery,
  UNCLAIMED,
} from "../domain/Event.js"
import type { RunId } from "../domain/Ids.js"
import { Tenant } from "../domain/Tenant.js"
import type * as Time from "../domain/Time.js"
import { Backend, type Corrupt } from "../errors/StoreError.js"
import { Acceptance, EventStore } from "../services/EventStore.js"
import { decodeRows } from "./internal/Columns.js"
import * as Dialect from "./internal/Dialect.js"
import {
  ClaimRow,
  DeadRow,
  EventKeyRow,
  EventRow,
  encodeJson,
  keyOf,
  SubscriptionRow,
  toEvent,
  toSubscription,
  WaitAgeRow,
  WaitIdRow,
} from "./internal/EventRows.js"
import * as Sql from "./internal/Sql.js"

/** The columns of a wait's row, in `SubscriptionRow`'s order. */
const WAIT_COLUMNS = "run_id, effect_key, case_id, step, phase, event_kind, namespace, value, created_at, elected_event"

/** How often `matchWaiter` may find its picked wait elected or unsubscribed under it before it reports the churn. */
const ELECT_ATTEMPTS = 8

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make

  // internal: statements shared by several verbs

  /** The stored keys of `ids`, each event's ordered by (namespace, value) by code point. */
  const keysOf = (tenant: string, ids: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const byEvent = new Map<string, Array<CorrelationKey.CorrelationKey>>()
      if (ids.length === 0) return byEvent
      const rows = yield* sql`
        SELECT event_id, namespace, value FROM inbound_correlation
         WHERE tenant = ${tenant} AND ${sql.in("event_id", ids)}`.pipe(
        Effect.flatMap(decodeRows(EventKeyRow, "inbound_correlation")),
      )
      for (const row of rows) {
        const keys = byEvent.get(row.event_id) ?? []
        keys.push(keyOf(row))
        byEvent.set(row.event_id, keys)
      }
      // Sorted here, by code point, so the order never depends on a database collation.
      for (const keys of byEvent.values()) keys.sort(CorrelationKey.order)
      return byEvent
    })

  /** One event's stored keys: the lean statement `toBuffered` sends for every claimed or accepted event. */
  const keysOfOne = dialect.query(EventKeyRow, "inbound_correlation", { named: true })`
    SELECT event_id, namespace, value FROM inbound_correlation WHERE tenant = ${0} AND event_id = ${1}`

  /** An event row with its keys re-read from storage, ordered by (namespace, value) by code point. */
  const toBuffered = (tenant: string, row: typeof EventRow.Type) =>
    Effect.map(
      keysOfOne(tenant, row.event_id),
      (rows) =>
        new BufferedEvent(
          { event: toEvent(row, rows.map(keyOf).sort(CorrelationKey.order)), receivedAt: row.received_at },
          true,
        ),
    )

  /**
   * claimFor's pick and claim for one key, compiled once. Unnamed on pg: a key's backlog is skewed
   * (one key with thousands of buffered events, most with one), the generic-plan trap.
   * pg: pick and claim in one statement; SKIP LOCKED sends a concurrent claimer past a row another
   * is taking, and the lock re-checks the predicate, so one run wins. sqlite: the same pick and
   * claim under the write lock `Dialect.write` holds. Parameters: run, at, tenant, tenant, kind,
   * namespace, value, run, run (each hole its own, as the bench mirror numbers them).
   */
  const claimOne = dialect.query(EventRow, "inbound_events")`
    UPDATE inbound_events SET claimed_by = ${0}, claimed_at = ${1}
     WHERE tenant = ${2} AND event_id = (
       SELECT e.event_id FROM inbound_events e
         JOIN inbound_correlation c ON c.tenant = e.tenant AND c.event_id = e.event_id
        WHERE e.tenant = ${3} AND e.kind = ${4}
          AND c.namespace = ${5} AND c.value = ${6}
          AND (e.claimed_by IS NULL OR e.claimed_by = ${7}) AND NOT e.dead
        ORDER BY e.received_at, e.event_id LIMIT 1${dialect.name === "pg" ? " FOR UPDATE OF e SKIP LOCKED" : ""})
       AND (claimed_by IS NULL OR claimed_by = ${8}) AND NOT dead
    RETURNING event_id, source, bare_id, kind, payload, received_at`

  const insertEventRow = dialect.command({ named: true })`
    INSERT INTO inbound_events (tenant, event_id, source, bare_id, kind, payload, received_at, claimed_by, claimed_at)
    VALUES (${0}, ${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8})
    ON CONFLICT (tenant, event_id) DO NOTHING
    RETURNING event_id`

  /** `n` keys of one event in one statement: tenant, event, namespace, value for each. */
  const insertKeys = Dialect.perCount((n: number) =>
    dialect.command({ named: true })(
      ...Dialect.parts([
        "INSERT INTO inbound_correlation (tenant, event_id, namespace, value) VALUES ",
        ...Dialect.tuples(n, (i) => [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]),
      ]),
    ),
  )

  /** Writes a new event and its keys; `claimedBy` set means claimed from the start. `false` when the key was known. */
  const insertEvent = (tenant: string, event: InboundEvent, at: Time.Timestamp, claimedBy: Option.Option<RunId>) => {
    const id = dedupKey(event)
    const claimedAt = Option.isSome(claimedBy) ? at : null
    // A key offered twice is one key; inserted twice it would trip the primary key.
    const keys = CorrelationKey.dedupe(event.correlation)
    return Effect.flatMap(encodeJson(event.payload), (payload) =>
      Effect.flatMap(
        insertEventRow(
          tenant,
          id,
          event.source,
          event.id,
          event.kind,
          payload,
          at,
          Option.getOrNull(claimedBy),
          claimedAt,
        ),
        (inserted) =>
          // A known key changes nothing, its keys included: the first copy is the message of record.
          inserted === 0
            ? Effect.succeed(false)
            : keys.length === 0
              ? Effect.succeed(true)
              : Effect.as(insertKeys(keys.length)(...keys.flatMap((k) => [tenant, id, k.namespace, k.value])), true),
      ),
    )
  }

  /** Assembles waits from their rows, one per (run, effect), in the order each wait first appears in `rows`. */
  const assembleWaits = (rows: ReadonlyArray<typeof SubscriptionRow.Type>) => {
    const waits = new Map<string, Array<typeof SubscriptionRow.Type>>()
    for (const row of rows) {
      const id = `${row.run_id} ${row.effect_key}`
      const group = waits.get(id) ?? []
      group.push(row)
      waits.set(id, group)
    }
    return [...waits.values()].flatMap((group) => {
      const first = group[0]
      return first === undefined ? [] : [toSubscription(first, group)]
    })
  }

  /** Every row of one wait, locked on pg in primary-key order so two lockers never deadlock. */
  const lockWait = dialect.query(SubscriptionRow, "subscriptions", { named: true })`
    SELECT ${WAIT_COLUMNS} FROM subscriptions
     WHERE tenant = ${0} AND run_id = ${1} AND effect_key = ${2}
     ORDER BY namespace, value ${dialect.forUpdate}`

  /** Every row of one wait, unlocked. */
  const waitRows = dialect.query(SubscriptionRow, "subscriptions", { named: true })`
    SELECT ${WAIT_COLUMNS} FROM subscriptions
     WHERE tenant = ${0} AND run_id = ${1} AND effect_key = ${2}
     ORDER BY namespace, value`

  const eventRow = dialect.query(EventRow, "inbound_events", { named: true })`
    SELECT event_id, source, bare_id, kind, payload, received_at FROM inbound_events
     WHERE tenant = ${0} AND event_id = ${1}`

  /** The stored event under dedup key `id`, with its stored keys; none when it was never accepted. */
  const storedEvent = (tenant: string, id: string) =>
    Effect.flatMap(eventRow(tenant, id), ([row]) =>
      row === undefined
        ? Effect.succeed(Option.none<BufferedEvent>())
        : Effect.map(toBuffered(tenant, row), Option.some),
    )

  /** The earliest-registered wait on one key that no event has elected. Parameters: tenant, kind, namespace, value. */
  const pickWait = dialect.query(WaitIdRow, "subscriptions", { named: true })`
    SELECT s.run_id, s.effect_key
      FROM subscriptions s
     WHERE s.tenant = ${0} AND s.event_kind = ${1}
       AND s.namespace = ${2} AND s.value = ${3}
       AND NOT EXISTS (
         SELECT 1 FROM subscriptions x
          WHERE x.tenant = s.tenant AND x.run_id = s.run_id AND x.effect_key = s.effect_key
            AND x.elected_event IS NOT NULL)
     ORDER BY s.created_at, s.run_id, s.effect_key
     LIMIT 1`

  /**
   * Inside `Dialect.write`: the earliest-registered unelected wait of the event's kind on its
   * first key that has one, its rows locked on pg so a second event electing it through any of
   * its keys waits for us and then finds it elected; none when no key has such a wait. A wait is
   * elected when any of its rows is marked: a key `subscribe` added after the election carries no
   * mark, and must not let a second event in.
   */
  const electWait = (tenant: string, event: InboundEvent, id: string) => {
    const keys = CorrelationKey.dedupe(event.correlation)
    const onKey = (
      i: number,
      attempt: number,
    ): Effect.Effect<Option.Option<typeof WaitIdRow.Type>, SqlError | Corrupt | Backend> => {
      const k = keys[i]
      if (k === undefined) return Effect.succeed(Option.none())
      return Effect.flatMap(pickWait(tenant, event.kind, k.namespace, k.value), ([picked]) => {
        if (picked === undefined) return onKey(i + 1, 0)
        return Effect.flatMap(lockWait(tenant, picked.run_id, picked.effect_key), (rows) => {
          const stillWaits =
            rows.every((r) => r.elected_event === null) &&
            rows.some((r) => r.event_kind === event.kind && r.namespace === k.namespace && r.value === k.value)
          // Elected by another event, unsubscribed (or re-registered without this key) between the
          // pick and the lock: pick again.
          if (stillWaits) return Effect.succeed(Option.some(picked))
          if (attempt === ELECT_ATTEMPTS - 1) {
            return Effect.fail(
              new Backend({ detail: `the waits on ${k} kept being elected or unsubscribed while ${id} elected one` }),
            )
          }
          return onKey(i, attempt + 1)
        })
      })
    }
    return onKey(0, 0)
  }

  /**
   * Marks every row of the elected wait with the event's dedup key, with the claim, so it can
   * never take a second event, and answers it from the marked rows (a concurrent `subscribe` may
   * have added a key: row locks do not stop inserts). Marked, not deleted (§5.2): deleted here,
   * a process dying after this commit and before `wake` took the lease lost the run: gone from
   * `waiting`, so redelivery never saw it, and holding no lease, so recovery never did. Kept, redelivery's `claimFor` hands the run this event (claimed for it),
   * and the engine's `unsubscribe`, once the answer is durable, deletes the rows as before.
   */
  const electWaitFor = (tenant: string, wait: typeof WaitIdRow.Type, id: string) =>
    Effect.map(markElected(id, tenant, wait.run_id, wait.effect_key), (marked) =>
      Option.fromNullable(assembleWaits(marked)[0]),
    )

  const markElected = dialect.query(SubscriptionRow, "subscriptions", { named: true })`
    UPDATE subscriptions SET elected_event = ${0}
     WHERE tenant = ${1} AND run_id = ${2} AND effect_key = ${3}
    RETURNING ${WAIT_COLUMNS}`

  // Buffered, unclaimed and live, checked by the write itself.
  const claimEvent = dialect.command({ named: true })`
    UPDATE inbound_events SET claimed_by = ${0}, claimed_at = ${1}
     WHERE tenant = ${2} AND event_id = ${3} AND claimed_by IS NULL AND NOT dead
    RETURNING event_id`

  /**
   * pg: serialises an acceptance with a wait's `claimFor` on the (kind, key)s they share. Without
   * it, under read committed, an acceptance that sees no wait yet and a `claimFor` that cannot see
   * the uncommitted event both miss, and the run sleeps beside its event until a sweep's
   * redelivery (a lost wake-up at the suspend boundary, found by the wake-race property). With it,
   * whichever commits second sees the first: the subscription is durable before its `claimFor`
   * starts, so a later acceptance elects it, and an earlier one has committed the event the
   * `claimFor` then reads. Keys are locked in one order, so two such transactions cannot deadlock.
   * sqlite: the write lock `Dialect.write` takes already serialises them (`Dialect.lockNames`).
   */
  const lockKeys = (tenant: string, kind: string, keys: ReadonlyArray<CorrelationKey.CorrelationKey>) =>
    dialect.lockNames(
      [...CorrelationKey.dedupe(keys)]
        .sort(CorrelationKey.order)
        .map((k) => `${tenant}\u001f${kind}\u001f${k.namespace}\u001f${k.value}`),
    )

  /** One statement per key count: the shared columns first (tenant … created_at), then each key's namespace and value. */
  const insertWait = Dialect.perCount((n: number) =>
    dialect.command({ named: true })(
      ...Dialect.parts([
        "INSERT INTO subscriptions (tenant, run_id, effect_key, case_id, step, phase, event_kind, namespace, value, created_at) VALUES ",
        ...Dialect.tuples(n, (i) => [0, 1, 2, 3, 4, 5, 6, 8 + 2 * i, 9 + 2 * i, 7]),
        " ON CONFLICT (tenant, run_id, effect_key, namespace, value) DO NOTHING",
      ]),
    ),
  )

  // pg: the run's waits of this kind are locked first (as `matchWaiter` locks a wait before the
  // event), so concurrent deliveries to one run queue here and never deadlock.
  const lockRunWaits = dialect.query(SubscriptionRow, "subscriptions", { named: true })`
    SELECT ${WAIT_COLUMNS} FROM subscriptions
     WHERE tenant = ${0} AND run_id = ${1} AND event_kind = ${2}
     ORDER BY effect_key, namespace, value ${dialect.forUpdate}`

  const lockClaim = dialect.query(ClaimRow, "inbound_events", { named: true })`
    SELECT claimed_by FROM inbound_events WHERE tenant = ${0} AND event_id = ${1} ${dialect.forUpdate}`

  const claimOf = dialect.query(ClaimRow, "inbound_events", { named: true })`
    SELECT claimed_by FROM inbound_events WHERE tenant = ${0} AND event_id = ${1}`

  const dropWait = dialect.command({ named: true })`
    DELETE FROM subscriptions WHERE tenant = ${0} AND run_id = ${1} AND effect_key = ${2}`

  // The delivery is journaled now, so the buffer's copy of the content goes; identity, claim and
  // dead-letter fields stay for dedup and accounting. Claims are the run's, not a wait's
  // (claimFor hands a run's claimed event to its next wait), so "claimed for this wait" is read
  // as: claimed by the run and takeable by none of the run's other registered waits (their kind,
  // a shared key). Those may be claimed and not journaled yet; stripping them here lost a second
  // wait's payload before its delivery was recorded. They go when their own wait unsubscribes.
  // Decision (issue 15): exact per-wait stripping needs the claiming wait stored on the event (a
  // `claimed_for` column). Since issue 16 an elected wait stays registered until `unsubscribe`,
  // so a wait `accept` or `matchWaiter` elected protects its event's payload too.
  const stripPayloads = dialect.command({ named: true })`
    UPDATE inbound_events SET payload = 'null'
     WHERE tenant = ${0} AND claimed_by = ${1}
       AND NOT EXISTS (
         SELECT 1 FROM subscriptions s
           JOIN inbound_correlation c
             ON c.tenant = s.tenant AND c.namespace = s.namespace AND c.value = s.value
          WHERE s.tenant = inbound_events.tenant AND s.run_id = ${1}
            AND s.event_kind = inbound_events.kind AND c.event_id = inbound_events.event_id)`

  const erase = dialect.command({ named: true })`
    UPDATE inbound_events SET payload = 'null' WHERE tenant = ${0} AND event_id = ${1} RETURNING event_id`

  // Inclusive: with whole-second stamps, `<` would spare this second's events from a zero grace.
  // Unnamed on pg: how many events are old enough is the skew a generic plan gets wrong.
  const retire = dialect.command()`
    UPDATE inbound_events SET dead = TRUE, dead_reason = ${0}
     WHERE tenant = ${1} AND claimed_by IS NULL AND NOT dead AND received_at <= ${2}
    RETURNING event_id`

  return EventStore.of({
    buffer: Sql.verb((tenant, event: InboundEvent, at: Time.Timestamp) =>
      // Event and keys in one transaction: an event reachable by some of its keys would match by luck.
      dialect.write(insertEvent(tenant, event, at, Option.none())),
    ),

    subscribe: Sql.verb((tenant, sub: Subscription, at: Time.Timestamp) => {
      // In key order, so two concurrent subscribes of one wait insert in the same order and
      // cannot each wait on a row the other inserted.
      const keys = [...CorrelationKey.dedupe(sub.correlation)].sort(CorrelationKey.order)
      if (keys.length === 0) return Effect.void
      // One statement for every key, so the wait is registered whole or not at all; a repeat
      // keeps the rows already present with their first `createdAt`.
      return Effect.asVoid(
        insertWait(keys.length)(
          tenant,
          sub.run,
          sub.effect,
          Option.getOrNull(sub.case),
          sub.step,
          sub.phase,
          sub.kind,
          at,
          ...keys.flatMap((k) => [k.namespace, k.value]),
        ),
      )
    }),

    claimFor: (sub, at) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* dialect.write(
          Effect.gen(function* () {
            yield* lockKeys(tenant, sub.kind, sub.correlation)
            for (const k of CorrelationKey.dedupe(sub.correlation)) {
              // Unclaimed, or already this run's: a run that crashed between claim and resume
              // gets its own event back; another run's claim is never taken.
              const claimed = yield* claimOne(
                sub.run,
                at,
                tenant,
                tenant,
                sub.kind,
                k.namespace,
                k.value,
                sub.run,
                sub.run,
              )
              const row = claimed[0]
              if (row !== undefined) return Option.some(yield* toBuffered(tenant, row))
            }
            return Option.none<BufferedEvent>()
          }),
        )
      }).pipe(Sql.orBackend),

    accept: Sql.verb((tenant, event: InboundEvent, at: Time.Timestamp) => {
      const id = dedupKey(event)
      // Buffer and match in one transaction. Done as two, a connection lost between them left the
      // event stored and unclaimed while its waiter still waited, and the producer's retry was a
      // duplicate that never matched: the wait starved. One transaction either happens whole, or
      // not at all and the retry starts afresh. The wait is elected and locked before the event
      // row is written (the order `matchWaiter` and `deliverTo` lock in), so an acceptance and a
      // targeted delivery of the same event never wait on each other in a cycle.
      const fresh = (elected: Option.Option<typeof WaitIdRow.Type>) =>
        Effect.flatMap(
          insertEvent(
            tenant,
            event,
            at,
            Option.map(elected, (w) => w.run_id),
          ),
          (inserted): Effect.Effect<Acceptance, SqlError | Corrupt | Backend> => {
            if (!inserted) {
              // A concurrent acceptance of the same key committed first; the elected wait is untouched.
              return Effect.flatMap(storedEvent(tenant, id), (winner) =>
                Option.isNone(winner)
                  ? Effect.fail(new Backend({ detail: `${id} was refused as known but cannot be read` }))
                  : Effect.succeed(Acceptance.Duplicate({ stored: winner.value })),
              )
            }
            if (Option.isNone(elected)) return Effect.succeed(Acceptance.Buffered())
            return Effect.flatMap(electWaitFor(tenant, elected.value, id), (marked) =>
              // The wait's rows are locked (pg) or the write lock held (sqlite): they cannot be gone.
              Option.isNone(marked)
                ? Effect.fail(new Backend({ detail: `the wait elected for ${id} vanished` }))
                : Effect.succeed(Acceptance.Matched({ subscription: marked.value })),
            )
          },
        )
      return dialect.write(
        Effect.flatMap(storedEvent(tenant, id), (known) =>
          // A known key is the common duplicate: answered without electing (and locking) a wait.
          Option.isSome(known)
            ? Effect.succeed(Acceptance.Duplicate({ stored: known.value }))
            : lockKeys(tenant, event.kind, event.correlation).pipe(
                Effect.zipRight(electWait(tenant, event, id)),
                Effect.flatMap(fresh),
              ),
        ),
      )
    }),

    accepted: (source, bareId) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // One snapshot, so the row and its keys come from one moment.
        return yield* dialect.read(storedEvent(tenant, dedupKeyOf(source, bareId)))
      }).pipe(Sql.orBackend),

    matchWaiter: Sql.verb((tenant, event: InboundEvent, at: Time.Timestamp) => {
      const id = dedupKey(event)
      return dialect.write(
        Effect.flatMap(electWait(tenant, event, id), (elected) =>
          Option.isNone(elected)
            ? Effect.succeed(Option.none<Subscription>())
            : Effect.flatMap(claimEvent(elected.value.run_id, at, tenant, id), (claimed) =>
                // Not buffered, claimed or dead: no other key may try either.
                claimed === 0 ? Effect.succeed(Option.none<Subscription>()) : electWaitFor(tenant, elected.value, id),
              ),
        ),
      )
    }),

    deliverTo: Sql.verb((tenant, run: RunId, event: InboundEvent, at: Time.Timestamp) => {
      const id = dedupKey(event)
      return dialect.write(
        Effect.gen(function* () {
          // pg: the run's waits of this kind are locked first (as `matchWaiter` locks a wait before
          // the event), so concurrent deliveries to one run queue here and never deadlock.
          const rows = yield* lockRunWaits(tenant, run, event.kind)
          // The wait this event elected before (a retry), else the lowest-effect-key wait no other
          // event elected that holds one of the event's keys; rows are in effect-key order. A wait
          // is elected as a whole (every row marked), and an election is not shared: a wait
          // `accept` elected does not take a targeted event too, and the reverse.
          const holds = (r: typeof SubscriptionRow.Type) =>
            event.correlation.some((k) => k.namespace === r.namespace && k.value === r.value)
          const electedBy = (effect: string) =>
            rows.find((w) => w.effect_key === effect && w.elected_event !== null)?.elected_event ?? null
          const hit =
            rows.find((r) => holds(r) && electedBy(r.effect_key) === id) ??
            rows.find((r) => holds(r) && electedBy(r.effect_key) === null)
          // The answer carries all of the wait's keys, as `matchWaiter` and `waiting` do, rows of
          // another kind included (read, not locked: locking them after this kind's rows could
          // cross a delivery of that kind locking in the other order).
          const candidate =
            hit === undefined
              ? Option.none<Subscription>()
              : Option.fromNullable(assembleWaits(yield* waitRows(tenant, run, hit.effect_key))[0])
          const decide = (claimedBy: string | null): TargetedDelivery =>
            claimedBy === run && Option.isSome(candidate)
              ? TargetedDelivery.Matched({ subscription: candidate.value })
              : TargetedDelivery.Duplicate()
          const [known] = yield* lockClaim(tenant, id)
          // Accepted before: a retry of this run's delivery is answered again; nothing is written.
          if (known !== undefined) return decide(known.claimed_by)
          if (Option.isNone(candidate)) return TargetedDelivery.NotWaiting()
          const inserted = yield* insertEvent(tenant, event, at, Option.some(run))
          if (inserted) {
            // Marked as `accept` marks, so redelivery can recover the run after a crash here too,
            // and no broadcast event elects this wait as well.
            yield* electWaitFor(tenant, { run_id: run, effect_key: candidate.value.effect }, id)
            return TargetedDelivery.Matched({ subscription: candidate.value })
          }
          // Lost the insert to a concurrent acceptance of the same key: judge it as accepted.
          const [winner] = yield* claimOf(tenant, id)
          return decide(winner?.claimed_by ?? null)
        }),
      )
    }),

    unsubscribe: Sql.verb((tenant, run: RunId, effect: EffectKey) =>
      dialect.write(Effect.zipRight(dropWait(tenant, run, effect), Effect.asVoid(stripPayloads(tenant, run)))),
    ),

    erasePayload: Sql.verb((tenant, source: string, bareId: string) =>
      Effect.map(erase(tenant, dedupKeyOf(source, bareId)), (erased) => erased > 0),
    ),

    sweepUnclaimed: Sql.verb((tenant, olderThan: Time.Timestamp, reason: string) => retire(reason, tenant, olderThan)),

    deadLetters: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        return yield* dialect.read(
          Effect.gen(function* () {
            const rows = yield* sql`
              SELECT event_id, source, bare_id, kind, payload, received_at, dead_reason FROM inbound_events
               WHERE tenant = ${tenant} AND dead
               ORDER BY received_at DESC, event_id DESC LIMIT ${n}`.pipe(
              Effect.flatMap(decodeRows(DeadRow, "inbound_events")),
            )
            const keys = yield* keysOf(
              tenant,
              rows.map((r) => r.event_id),
            )
            return rows.map(
              (row) =>
                new DeadLetter({
                  event: toEvent(row, keys.get(row.event_id) ?? []),
                  receivedAt: row.received_at,
                  // One wording whatever the sweep stored: no reason and an empty one both read "unclaimed".
                  reason: row.dead_reason === null || row.dead_reason === "" ? UNCLAIMED : row.dead_reason,
                }),
            )
          }),
        )
      }).pipe(Sql.orBackend),

    waiting: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        return yield* dialect.read(
          Effect.gen(function* () {
            // The limit counts waits, not rows: pick the waits first, then read all their keys.
            const waits = yield* sql`
              SELECT run_id, effect_key, MIN(created_at) AS first FROM subscriptions
               WHERE tenant = ${tenant}
               GROUP BY run_id, effect_key
               ORDER BY first, run_id, effect_key LIMIT ${n}`.pipe(
              Effect.flatMap(decodeRows(WaitAgeRow, "subscriptions")),
            )
            if (waits.length === 0) return []
            const rows = yield* sql`
              SELECT run_id, effect_key, case_id, step, phase, event_kind, namespace, value, created_at, elected_event
                FROM subscriptions
               WHERE tenant = ${tenant}
                 AND ${sql.or(waits.map((w) => sql`(run_id = ${w.run_id} AND effect_key = ${w.effect_key})`))}`.pipe(
              Effect.flatMap(decodeRows(SubscriptionRow, "subscriptions")),
            )
            const assembled = assembleWaits(rows)
            return waits.flatMap((w) => assembled.filter((s) => s.run === w.run_id && s.effect === w.effect_key))
          }),
        )
      }).pipe(Sql.orBackend),
  })
})

/** EventStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<EventStore, never, SqlClient.SqlClient> = Layer.effect(EventStore, make)
