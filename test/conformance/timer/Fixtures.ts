/**
 * Small builders for the TimerStore battery; seed data always goes through the store itself.
 */
import { randomBytes } from "node:crypto"
import type { Vitest } from "@effect/vitest"
import { Effect, Option } from "effect"
import { EffectKey } from "../../../src/domain/EffectKey.js"
import { type CaseId, generateRunId, type RunId, StepId } from "../../../src/domain/Ids.js"
import type { Phase } from "../../../src/domain/Phase.js"
import * as Time from "../../../src/domain/Time.js"
import { Timer } from "../../../src/domain/Timer.js"
import { TimerStore } from "../../../src/services/TimerStore.js"
import type { Stores } from "../../support/Backend.js"

/** The `it.effect` of the TimerStore suite: the shared services plus this store. */
export type Tester = Vitest.Tester<Stores | TimerStore>

export const at = (seconds: number): Time.Timestamp => Time.Timestamp.make(seconds)

export const effectKey = (): EffectKey => EffectKey.make(randomBytes(32).toString("hex"))

export interface TimerOptions {
  readonly run?: RunId
  readonly effect?: EffectKey
  readonly case?: CaseId
  readonly step?: number
  readonly phase?: Phase
}

/** A timer firing at `fireAt`, with fresh run and effect unless given. */
export const timer = (fireAt: number, options: TimerOptions = {}): Timer =>
  new Timer({
    run: options.run ?? generateRunId(),
    case: Option.fromNullable(options.case),
    effect: options.effect ?? effectKey(),
    step: StepId.make(options.step ?? 0),
    phase: options.phase ?? "forward",
    fireAt: at(fireAt),
  })

/** Arms every timer, in the order given. */
export const arm = (...timers: ReadonlyArray<Timer>) =>
  Effect.flatMap(TimerStore, (store) => Effect.forEach(timers, (t) => store.arm(t), { discard: true }))

export const claimDue = (now: number, limit = 100) =>
  Effect.flatMap(TimerStore, (store) => store.claimDue(at(now), limit))

export const pending = (limit = 100) => Effect.flatMap(TimerStore, (store) => store.pending(limit))

export const pendingCount = Effect.flatMap(TimerStore, (store) => store.pendingCount())

/** The contract's total order: fire instant, then run, then effect key. */
export const inFireOrder = (timers: ReadonlyArray<Timer>): ReadonlyArray<Timer> =>
  [...timers].sort((a, b) =>
    a.fireAt !== b.fireAt
      ? a.fireAt - b.fireAt
      : a.run !== b.run
        ? a.run < b.run
          ? -1
          : 1
        : a.effect < b.effect
          ? -1
          : a.effect > b.effect
            ? 1
            : 0,
  )

/** A timer's identity, for comparing sets of claims. */
export const id = (t: Timer): string => `${t.run}/${t.effect}`
