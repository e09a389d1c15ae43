/**
 * BatchStore in process memory (§5.5), written from the contract as the reference model the SQL
 * layers are compared against and as a public layer for users' tests.
 *
 * Every verb is atomic by construction: it reads the tenant, then does all of its reading,
 * checking and writing in one synchronous body (`Effect.suspend` returning an `Either`), so no
 * other fiber runs between a check and the write it guards. State is plain `Map`s keyed by tenant
 * first. An item's outcome is kept as its stored tag and detail, as the SQL layers keep it, and
 * every record is rebuilt on the way out, so a caller never holds a reference into the store.
 */
import { Effect, Either, Layer, Option } from "effect"
import {
  BatchCensus,
  detailOf,
  fromStored,
  type ItemOutcome,
  ItemRecord,
  type OutcomeTag,
  tagOf,
} from "../../domain/Batch.js"
import type { BatchId, RunId } from "../../domain/Ids.js"
import * as Quota from "../../domain/Quota.js"
import { BatchPlanChanged, Corrupt, NotFound } from "../../errors/StoreError.js"
import { BatchStore } from "../../services/BatchStore.js"
import { clampLimit, compareText, perTenantEither } from "./internal/Memory.js"

interface Item {
  readonly run: RunId
  readonly outcome: OutcomeTag | undefined
  readonly detail: Option.Option<string>
  readonly spend: Quota.Spend
}

interface Batch {
  readonly planDigest: string
  exhausted: boolean
  /** By item key. */
  readonly items: Map<string, Item>
}

export const make: Effect.Effect<typeof BatchStore.Service> = Effect.sync(() => {
  /** Runs `f` on the caller's tenant's batches in one synchronous step. */
  const atomically = perTenantEither(() => new Map<BatchId, Batch>())

  return BatchStore.of({
    open: (id, planDigest) =>
      atomically((batches) => {
        // Whichever open came first froze the plan: compare with what stands, never what we offered.
        let batch = batches.get(id)
        if (batch === undefined) {
          batch = { planDigest, exhausted: false, items: new Map() }
          batches.set(id, batch)
        }
        if (batch.planDigest !== planDigest) {
          return Either.left(new BatchPlanChanged({ batch: id, stored: batch.planDigest, offered: planDigest }))
        }
        return Either.void
      }),

    planDigest: (id) =>
      atomically((batches) => Either.right(Option.map(Option.fromNullable(batches.get(id)), (b) => b.planDigest))),

    markExhausted: (id) =>
      atomically((batches) => {
        const batch = batches.get(id)
        if (batch === undefined) return Either.left(new NotFound({ what: id }))
        batch.exhausted = true
        return Either.void
      }),

    isExhausted: (id) => atomically((batches) => Either.right(batches.get(id)?.exhausted ?? false)),

    reserve: (batchId, key, run) =>
      atomically((batches) => {
        const batch = batches.get(batchId)
        if (batch === undefined) return Either.left(new NotFound({ what: batchId }))
        // The first reservation stands, so the item's journal and effects stay with its first run.
        let item = batch.items.get(key)
        if (item === undefined) {
          item = { run, outcome: undefined, detail: Option.none(), spend: Quota.ZERO }
          batch.items.set(key, item)
        }
        return toRecord(key, item)
      }),

    record: (batchId, key, outcome, spend) =>
      atomically((batches) => {
        const batch = batches.get(batchId)
        const item = batch?.items.get(key)
        if (batch === undefined || item === undefined) return Either.left(new NotFound({ what: `${batchId}/${key}` }))
        // Overwrites, never adds: a resumed item reports its whole spend again.
        batch.items.set(key, { run: item.run, ...stored(outcome), spend: copySpend(spend) })
        return Either.void
      }),

    cursor: (batchId) =>
      atomically((batches) => {
        const batch = batches.get(batchId)
        const keys = sortedKeys(batch)
        // The first unsettled key (none, suspended, exhausted) holds the cursor strictly behind
        // it, or a resume would step over outstanding work.
        const first = keys.find((k) => !isSettled(batch?.items.get(k)?.outcome))
        const settled = first === undefined ? keys : keys.filter((k) => compareText(k, first) < 0)
        return Either.right(Option.fromNullable(settled[settled.length - 1]))
      }),

    census: (batchId) =>
      atomically((batches) => {
        const counts = { succeeded: 0, failed: 0, quarantined: 0, suspended: 0, exhausted: 0, inFlight: 0 }
        let spend = Quota.ZERO
        for (const item of batches.get(batchId)?.items.values() ?? []) {
          counts[item.outcome ?? "inFlight"] += 1
          // In-flight items' spend counts too; the sum saturates at MAX_SAFE_INTEGER.
          spend = Quota.add(spend, item.spend)
        }
        return Either.right(new BatchCensus({ ...counts, spend }))
      }),

    items: (batchId, limit) =>
      atomically((batches) => {
        const batch = batches.get(batchId)
        const page = sortedKeys(batch).slice(0, clampLimit(limit))
        return Either.all(
          page.flatMap((key) => {
            const item = batch?.items.get(key)
            return item === undefined ? [] : [toRecord(key, item)]
          }),
        )
      }),
  })
})

/** A BatchStore in process memory, empty each time the layer is built. */
export const layer: Layer.Layer<BatchStore> = Layer.effect(BatchStore, make)

// internal

/** Succeeded, failed and quarantined settle an item; no outcome, suspended and exhausted do not. */
const isSettled = (tag: OutcomeTag | undefined): boolean =>
  tag === "succeeded" || tag === "failed" || tag === "quarantined"

/** An outcome as the SQL layers store it: its tag beside its detail. */
const stored = (outcome: ItemOutcome) => ({ outcome: tagOf(outcome), detail: detailOf(outcome) })

const copySpend = (spend: Quota.Spend): Quota.Spend =>
  new Quota.Spend({ tokens: spend.tokens, minorUnits: spend.minorUnits })

/** A fresh record of a stored item; `Corrupt` cannot arise from what this store writes, but a detail-less outcome would be one. */
const toRecord = (key: string, item: Item): Either.Either<ItemRecord, Corrupt> => {
  const outcome =
    item.outcome === undefined
      ? Either.right(Option.none())
      : Either.map(fromStored(item.outcome, item.detail), Option.some)
  return Either.match(outcome, {
    onLeft: (detail) => Either.left(new Corrupt({ detail: `batch_items: ${detail}`, seq: 0 })),
    onRight: (outcome) => Either.right(new ItemRecord({ key, run: item.run, outcome, spend: copySpend(item.spend) })),
  })
}

const sortedKeys = (batch: Batch | undefined): Array<string> => [...(batch?.items.keys() ?? [])].sort(compareText)
