/**
 * EventStore in memory (§5.2), written from the contract as plain maps: the reference model the
 * SQL layers are compared against, and a store for users' own tests. Each verb runs its whole
 * read-check-write in one synchronous step (see `perTenant`), so "one message, two waiters" and
 * "two messages, one waiter" cannot interleave: the first verb to run has finished before the next
 * one looks.
 */
import { Effect, Either, Layer, Option } from "effect"
import * as CorrelationKey from "../../domain/CorrelationKey.js"
import type { EffectKey } from "../../domain/EffectKey.js"
import {
  BufferedEvent,
  DeadLetter,
  dedupKey,
  dedupKeyOf,
  InboundEvent,
  Subscription,
  TargetedDelivery,
  UNCLAIMED,
} from "../../domain/Event.js"
import type { CaseId, RunId, StepId } from "../../domain/Ids.js"
import type { Phase } from "../../domain/Phase.js"
import type { Timestamp } from "../../domain/Time.js"
import { Acceptance, EventStore } from "../../services/EventStore.js"
import { clampLimit, compareNumber, compareText, fromJsonText, jsonText, perTenant } from "./internal/Memory.js"

/** A fresh, empty EventStore each time the layer is built. */
export const make: Effect.Effect<typeof EventStore.Service> = Effect.sync(() => {
  const atomically = perTenant(
    (): State => ({ events: new Map<string, EventRow>(), waits: new Map<string, WaitRow>() }),
  )

  /** Writes a new event with its keys; `claimedBy` set means claimed from the start. */
  const insert = (state: State, event: InboundEvent, payload: string, at: Timestamp, claimedBy: RunId | null) => {
    state.events.set(dedupKey(event), {
      id: dedupKey(event),
      source: event.source,
      bareId: event.id,
      kind: event.kind,
      // A key offered twice is one key.
      keys: [...CorrelationKey.dedupe(event.correlation)],
      payload,
      receivedAt: at,
      claimedBy,
      claimedAt: claimedBy === null ? null : at,
      dead: false,
      deadReason: null,
    })
  }

  /** Every row of one wait. */
  const rowsOf = (state: State, run: RunId, effect: EffectKey) =>
    [...state.waits.values()].filter((w) => w.run === run && w.effect === effect)

  /** The event whose election marks the wait (any of its rows: a key added later carries none); null when unelected. */
  const electedBy = (state: State, run: RunId, effect: EffectKey): string | null =>
    rowsOf(state, run, effect).find((r) => r.elected !== null)?.elected ?? null

  /** The earliest-registered unelected wait of the event's kind on its first key that has one. */
  const elect = (state: State, event: InboundEvent): WaitRow | undefined => {
    for (const key of CorrelationKey.dedupe(event.correlation)) {
      const [elected] = [...state.waits.values()]
        .filter(
          (w) =>
            w.kind === event.kind && CorrelationKey.equals(w.key, key) && electedBy(state, w.run, w.effect) === null,
        )
        .sort(
          (a, b) =>
            compareNumber(a.createdAt, b.createdAt) || compareText(a.run, b.run) || compareText(a.effect, b.effect),
        )
      if (elected !== undefined) return elected
    }
    return undefined
  }

  /**
   * Marks every row of the satisfied wait with the event, with the claim, so it can never take a
   * second event, and answers it. Kept, not deleted (issue 16, see `EventStoreSql.electWaitFor`):
   * `waiting` still lists it, so redelivery recovers a run whose process died before the wake.
   */
  const markElected = (state: State, run: RunId, effect: EffectKey, event: string): Subscription => {
    const rows = rowsOf(state, run, effect)
    for (const row of rows) row.elected = event
    return toSubscription(rows)
  }

  return EventStore.of({
    buffer: (event, at) =>
      atomically((state) => {
        const payload = jsonText(event.payload)
        if (Either.isLeft(payload)) return Effect.dieMessage(`event payload must be JSON: ${payload.left}`)
        // A known key changes nothing, its keys included: the first copy is the message of record.
        if (state.events.has(dedupKey(event))) return Effect.succeed(false)
        insert(state, event, payload.right, at, null)
        return Effect.succeed(true)
      }),

    subscribe: (sub, at) =>
      atomically((state) => {
        // A repeat keeps the rows already present, with their first `createdAt`.
        for (const key of CorrelationKey.dedupe(sub.correlation)) {
          const id = waitRowId(sub.run, sub.effect, key)
          if (state.waits.has(id)) continue
          state.waits.set(id, {
            run: sub.run,
            effect: sub.effect,
            case: sub.case,
            step: sub.step,
            phase: sub.phase,
            kind: sub.kind,
            key,
            createdAt: at,
            elected: null,
          })
        }
        return Effect.void
      }),

    claimFor: (sub, at) =>
      atomically((state) => {
        for (const key of CorrelationKey.dedupe(sub.correlation)) {
          // Unclaimed, or already this run's: a run that crashed between claim and resume gets its
          // own event back; another run's claim is never taken.
          const [oldest] = [...state.events.values()]
            .filter(
              (e) =>
                e.kind === sub.kind &&
                !e.dead &&
                (e.claimedBy === null || e.claimedBy === sub.run) &&
                e.keys.some((k) => CorrelationKey.equals(k, key)),
            )
            .sort((a, b) => compareNumber(a.receivedAt, b.receivedAt) || compareText(a.id, b.id))
          if (oldest !== undefined) {
            oldest.claimedBy = sub.run
            oldest.claimedAt = at
            return Effect.succeed(
              Option.some(new BufferedEvent({ event: toEvent(oldest), receivedAt: oldest.receivedAt })),
            )
          }
        }
        return Effect.succeed(Option.none())
      }),

    accept: (event, at) =>
      atomically((state) => {
        const known = state.events.get(dedupKey(event))
        if (known !== undefined) {
          return Effect.succeed(
            Acceptance.Duplicate({
              stored: new BufferedEvent({ event: toEvent(known), receivedAt: known.receivedAt }),
            }),
          )
        }
        const payload = jsonText(event.payload)
        if (Either.isLeft(payload)) return Effect.dieMessage(`event payload must be JSON: ${payload.left}`)
        const elected = elect(state, event)
        insert(state, event, payload.right, at, elected?.run ?? null)
        if (elected === undefined) return Effect.succeed(Acceptance.Buffered())
        return Effect.succeed(
          Acceptance.Matched({ subscription: markElected(state, elected.run, elected.effect, dedupKey(event)) }),
        )
      }),

    accepted: (source, bareId) =>
      atomically((state) => {
        const found = state.events.get(dedupKeyOf(source, bareId))
        return Effect.succeed(
          found === undefined
            ? Option.none()
            : Option.some(new BufferedEvent({ event: toEvent(found), receivedAt: found.receivedAt })),
        )
      }),

    matchWaiter: (event, at) =>
      atomically((state) => {
        const elected = elect(state, event)
        if (elected === undefined) return Effect.succeed(Option.none())
        // Only a buffered, unclaimed, live event can match; otherwise no further key may try.
        const stored = state.events.get(dedupKey(event))
        if (stored === undefined || stored.claimedBy !== null || stored.dead) return Effect.succeed(Option.none())
        stored.claimedBy = elected.run
        stored.claimedAt = at
        return Effect.succeed(Option.some(markElected(state, elected.run, elected.effect, dedupKey(event))))
      }),

    deliverTo: (run, event, at) =>
      atomically((state) => {
        // The run's wait this event elected before (a retry), else its unelected wait of this kind
        // with the lowest effect key holding one of the event's keys, answered with all of that
        // wait's keys; an election is not shared with `accept`'s (see `EventStoreSql.deliverTo`).
        const id = dedupKey(event)
        const holding = [...state.waits.values()]
          .filter(
            (w) =>
              w.run === run && w.kind === event.kind && event.correlation.some((k) => CorrelationKey.equals(k, w.key)),
          )
          .sort((a, b) => compareText(a.effect, b.effect))
        const hit =
          holding.find((w) => electedBy(state, run, w.effect) === id) ??
          holding.find((w) => electedBy(state, run, w.effect) === null)
        const candidate =
          hit === undefined ? Option.none<Subscription>() : Option.some(toSubscription(rowsOf(state, run, hit.effect)))
        const known = state.events.get(id)
        // Accepted before: a retry of this run's delivery is answered again; nothing is written.
        if (known !== undefined) {
          return Effect.succeed(
            known.claimedBy === run && Option.isSome(candidate)
              ? TargetedDelivery.Matched({ subscription: candidate.value })
              : TargetedDelivery.Duplicate(),
          )
        }
        if (Option.isNone(candidate)) return Effect.succeed(TargetedDelivery.NotWaiting())
        const payload = jsonText(event.payload)
        if (Either.isLeft(payload)) return Effect.dieMessage(`event payload must be JSON: ${payload.left}`)
        insert(state, event, payload.right, at, run)
        markElected(state, run, candidate.value.effect, id)
        return Effect.succeed(TargetedDelivery.Matched({ subscription: candidate.value }))
      }),

    unsubscribe: (run, effect) =>
      atomically((state) => {
        for (const row of rowsOf(state, run, effect)) state.waits.delete(waitRowId(row.run, row.effect, row.key))
        // The delivery is journaled now, so the buffer's copy of the content goes; identity,
        // claim and dead-letter fields stay for dedup and accounting. Not the content of an event
        // another registered wait of the run could still take (its kind, a shared key): that
        // delivery may not be journaled yet (see `EventStoreSql.unsubscribe`).
        const others = [...state.waits.values()].filter((w) => w.run === run)
        for (const e of state.events.values()) {
          if (e.claimedBy !== run) continue
          const takeable = others.some((w) => w.kind === e.kind && e.keys.some((k) => CorrelationKey.equals(k, w.key)))
          if (!takeable) e.payload = "null"
        }
        return Effect.void
      }),

    erasePayload: (source, bareId) =>
      atomically((state) => {
        const found = state.events.get(dedupKeyOf(source, bareId))
        if (found === undefined) return Effect.succeed(false)
        found.payload = "null"
        return Effect.succeed(true)
      }),

    sweepUnclaimed: (olderThan, reason) =>
      atomically((state) => {
        let retired = 0
        for (const e of state.events.values()) {
          // Inclusive: a zero grace retires this second's events too.
          if (e.claimedBy === null && !e.dead && e.receivedAt <= olderThan) {
            e.dead = true
            e.deadReason = reason
            retired++
          }
        }
        return Effect.succeed(retired)
      }),

    deadLetters: (limit) =>
      atomically((state) =>
        Effect.succeed(
          [...state.events.values()]
            .filter((e) => e.dead)
            .sort((a, b) => compareNumber(b.receivedAt, a.receivedAt) || compareText(b.id, a.id))
            .slice(0, clampLimit(limit))
            .map(
              (e) =>
                new DeadLetter({
                  event: toEvent(e),
                  receivedAt: e.receivedAt,
                  reason: e.deadReason === null || e.deadReason === "" ? UNCLAIMED : e.deadReason,
                }),
            ),
        ),
      ),

    waiting: (limit) =>
      atomically((state) => {
        // The limit counts waits, not rows.
        const waits = new Map<string, Array<WaitRow>>()
        for (const row of state.waits.values()) {
          const id = `${row.run} ${row.effect}`
          waits.set(id, [...(waits.get(id) ?? []), row])
        }
        const first = (rows: ReadonlyArray<WaitRow>) => Math.min(...rows.map((r) => r.createdAt))
        return Effect.succeed(
          [...waits.values()]
            .map((rows) => ({ rows, first: first(rows), head: rows[0] }))
            .sort(
              (a, b) =>
                compareNumber(a.first, b.first) ||
                compareText(a.head?.run ?? "", b.head?.run ?? "") ||
                compareText(a.head?.effect ?? "", b.head?.effect ?? ""),
            )
            .slice(0, clampLimit(limit))
            .map((w) => toSubscription(w.rows)),
        )
      }),
  })
})

/** EventStore in memory; every build starts empty and shares nothing with another. */
export const layer: Layer.Layer<EventStore> = Layer.effect(EventStore, make)

// internal

interface State {
  /** By dedup key (source, U+001F, id). */
  readonly events: Map<string, EventRow>
  /** One row per (run, effect, key), as the SQL table has it. */
  readonly waits: Map<string, WaitRow>
}

interface EventRow {
  readonly id: string
  readonly source: string
  readonly bareId: string
  readonly kind: string
  readonly keys: ReadonlyArray<CorrelationKey.CorrelationKey>
  /** JSON text; `null` once erased or delivered. */
  payload: string
  readonly receivedAt: Timestamp
  claimedBy: RunId | null
  claimedAt: Timestamp | null
  dead: boolean
  deadReason: string | null
}

interface WaitRow {
  readonly run: RunId
  readonly effect: EffectKey
  readonly case: Option.Option<CaseId>
  readonly step: StepId
  readonly phase: Phase
  readonly kind: string
  readonly key: CorrelationKey.CorrelationKey
  readonly createdAt: Timestamp
  /** The dedup key of the event that elected this wait; null while it waits for one. */
  elected: string | null
}

const waitRowId = (run: RunId, effect: EffectKey, key: CorrelationKey.CorrelationKey) =>
  JSON.stringify([run, effect, key.namespace, key.value])

/** The event as it arrived, its keys by (namespace, value); a fresh record on every read. */
const toEvent = (row: EventRow): InboundEvent =>
  new InboundEvent({
    source: row.source,
    id: row.bareId,
    kind: row.kind,
    correlation: [...row.keys].sort(CorrelationKey.order),
    payload: fromJsonText(row.payload),
  })

/**
 * One wait from its rows (never empty). The earliest-registered row describes it, a tie on
 * `createdAt` broken by key; a later `subscribe` of the same (run, effect) only adds keys.
 */
const toSubscription = (rows: ReadonlyArray<WaitRow>): Subscription => {
  const [earliest] = [...rows].sort(
    (a, b) => compareNumber(a.createdAt, b.createdAt) || CorrelationKey.order(a.key, b.key),
  )
  if (earliest === undefined) throw new Error("a wait has at least one row")
  return new Subscription({
    run: earliest.run,
    case: earliest.case,
    effect: earliest.effect,
    step: earliest.step,
    phase: earliest.phase,
    kind: earliest.kind,
    correlation: rows.map((r) => r.key).sort(CorrelationKey.order),
  })
}
