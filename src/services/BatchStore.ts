/**
 * BatchStore (§5.5): batches frozen to one plan, and the reservation and outcome of each item.
 */
import { Context, type Effect, type Option } from "effect"
import type { BatchCensus, ItemOutcome, ItemRecord } from "../domain/Batch.js"
import type { BatchId, RunId } from "../domain/Ids.js"
import type { Spend } from "../domain/Quota.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Backend, BatchPlanChanged, Corrupt, NotFound } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

export class BatchStore extends Context.Tag("agentplane/BatchStore")<
  BatchStore,
  {
    /** Creates the batch if absent, idempotent for the same digest; fails with `BatchPlanChanged` when it was frozen with another. */
    readonly open: (id: BatchId, planDigest: string) => Op<void, BatchPlanChanged>
    /** The digest the batch was frozen with; none when the batch does not exist. */
    readonly planDigest: (id: BatchId) => Op<Option.Option<string>>
    /** Records that the source was read to its end; fails with `NotFound` for a missing batch. */
    readonly markExhausted: (id: BatchId) => Op<void, NotFound>
    /** Whether the source was read to its end; `false` for an unknown batch. */
    readonly isExhausted: (id: BatchId) => Read<boolean>
    /** Reserves the item for `run` if unreserved and returns the stored record, so a repeat gets the first run with its outcome and spend; fails with `NotFound` for a missing batch. */
    readonly reserve: (batch: BatchId, key: string, run: RunId) => Read<ItemRecord, NotFound>
    /** Overwrites the item's outcome, detail and spend, never adding; fails with `NotFound` naming `<batch>/<key>`. */
    readonly record: (batch: BatchId, key: string, outcome: ItemOutcome, spend: Spend) => Op<void, NotFound>
    /** The largest key below the smallest key without a terminal outcome, or the largest key when all are terminal; none when no such key exists. */
    readonly cursor: (batch: BatchId) => Op<Option.Option<string>>
    /** Items per outcome, `inFlight` for those without one, and the spend of every item; an unknown outcome is `Corrupt`. */
    readonly census: (batch: BatchId) => Read<BatchCensus>
    /** Up to `limit` item records, key ascending. */
    readonly items: (batch: BatchId, limit: number) => Read<ReadonlyArray<ItemRecord>>
  }
>() {}
