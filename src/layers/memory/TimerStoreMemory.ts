/**
 * TimerStore in memory (§5.3), written from the contract as a plain map: the reference model the
 * SQL layers are compared against, and a store for users' own tests. Each verb runs its whole
 * read-check-write in one synchronous step (see `perTenant`), so two sweepers cannot share a
 * timer: the second one looks only after the first has stamped its claims.
 */
import { Effect, Layer } from "effect"
import type { EffectKey } from "../../domain/EffectKey.js"
import type { RunId } from "../../domain/Ids.js"
import type { Timestamp } from "../../domain/Time.js"
import { claimLapsed, Timer } from "../../domain/Timer.js"
import { TimerStore } from "../../services/TimerStore.js"
import { clampLimit, compareNumber, compareText, perTenant } from "./internal/Memory.js"

/** A fresh, empty TimerStore each time the layer is built. */
export const make: Effect.Effect<typeof TimerStore.Service> = Effect.sync(() => {
  const atomically = perTenant(() => new Map<string, Row>())

  return TimerStore.of({
    arm: (timer) =>
      atomically((timers) => {
        // First registration stands: a re-arm changes nothing and `fireAt` never moves.
        const id = rowId(timer.run, timer.effect)
        if (!timers.has(id)) timers.set(id, { timer: new Timer({ ...timer }), claimedAt: null })
        return Effect.void
      }),

    claimDue: (now, limit) =>
      atomically((timers) => {
        // Inclusive both ways: due at `now`, and a claim exactly 60 s old has lapsed.
        const claimed = inFireOrder(
          [...timers.values()].filter(
            (row) => row.timer.fireAt <= now && (row.claimedAt === null || claimLapsed(row.claimedAt, now)),
          ),
        ).slice(0, clampLimit(limit))
        for (const row of claimed) row.claimedAt = now
        return Effect.succeed(claimed.map((row) => new Timer({ ...row.timer })))
      }),

    disarm: (run, effect) =>
      atomically((timers) => {
        timers.delete(rowId(run, effect))
        return Effect.void
      }),

    pendingCount: () => atomically((timers) => Effect.succeed(timers.size)),

    pending: (limit) =>
      atomically((timers) =>
        Effect.succeed(
          inFireOrder([...timers.values()])
            .slice(0, clampLimit(limit))
            .map((row) => new Timer({ ...row.timer })),
        ),
      ),
  })
})

/** TimerStore in memory; every build starts empty and shares nothing with another. */
export const layer: Layer.Layer<TimerStore> = Layer.effect(TimerStore, make)

// internal

interface Row {
  readonly timer: Timer
  /** When a sweeper last claimed it; null while nobody has. */
  claimedAt: Timestamp | null
}

const rowId = (run: RunId, effect: EffectKey) => `${run} ${effect}`

/** Earliest `fireAt` first, then run, then effect: the contract's total order. */
const inFireOrder = (rows: ReadonlyArray<Row>): Array<Row> =>
  [...rows].sort(
    (a, b) =>
      compareNumber(a.timer.fireAt, b.timer.fireAt) ||
      compareText(a.timer.run, b.timer.run) ||
      compareText(a.timer.effect, b.timer.effect),
  )
