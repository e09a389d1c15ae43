/**
 * TimerStore (§5.3): durable waits on the clock, claimed by sweepers under a 60 s lease.
 */
import { Context, type Effect } from "effect"
import type { EffectKey } from "../domain/EffectKey.js"
import type { RunId } from "../domain/Ids.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Timer } from "../domain/Timer.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import type { Alongside } from "./JournalStore.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

export class TimerStore extends Context.Tag("agentplane/TimerStore")<
  TimerStore,
  {
    /** Inserts the timer if its (run, effect) is absent; a re-arm is a no-op and `fireAt` never moves. */
    readonly arm: (timer: Timer) => Op<void>
    /** Claims up to `limit` timers with `fireAt <= now` that are unclaimed or claimed at or before `now − 60`, earliest `fireAt` first, setting `claimedAt = now`; concurrent sweepers never share one. */
    readonly claimDue: (now: Timestamp, limit: number) => Read<ReadonlyArray<Timer>>
    /** Deletes the timer of (run, effect); idempotent. Usually a journal write's alongside (a wake-up's release), it may carry the form a journal store over the same database folds it as (`JournalStore.Form`). */
    readonly disarm: (run: RunId, effect: EffectKey) => Alongside
    /** How many timers are armed, claimed or not. */
    readonly pendingCount: () => Read<number>
    /** Up to `limit` armed timers, due or not, claimed or not, earliest `fireAt` first. */
    readonly pending: (limit: number) => Read<ReadonlyArray<Timer>>
  }
>() {}
