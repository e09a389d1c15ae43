/**
 * QuotaStore (§5.6): a tenant's running set, emergency stop and spend per period. Admission
 * (§7) fails closed: it turns every failure here into `QuotaUnavailable`.
 */
import { Context, type Effect, type Option } from "effect"
import type { RunId } from "../domain/Ids.js"
import type { Spend } from "../domain/Quota.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { TooManyRuns } from "../errors/QuotaError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

export class QuotaStore extends Context.Tag("agentplane/QuotaStore")<
  QuotaStore,
  {
    /** Takes one slot for `run`, idempotent per run, admitting while fewer than `limit` are running (none: always); fails with `TooManyRuns` carrying the count. */
    readonly reserve: (run: RunId, limit: Option.Option<number>, at: Timestamp) => Read<void, TooManyRuns>
    /** Gives the run's slot back; idempotent. */
    readonly release: (run: RunId) => Op<void>
    /** Some sets the emergency stop for every instance, replacing any earlier reason; none lifts it, a no-op when unset. */
    readonly setHalt: (reason: Option.Option<string>) => Op<void>
    /** The halt reason in force; none when the tenant is not halted. */
    readonly halted: () => Op<Option.Option<string>>
    /** Adds `spend` to the period's totals in one upsert, saturating. */
    readonly accrue: (period: string, spend: Spend) => Op<void>
    /** The period's accrued spend; zero for an untouched period. */
    readonly spent: (period: string) => Read<Spend>
    /** How many runs hold a slot. */
    readonly running: () => Read<number>
  }
>() {}
