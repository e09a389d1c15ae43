/**
 * BatchStore commands (§5.5): two batches, two plan digests, four item keys reserved by three
 * runs and recorded with every outcome, spends up to the saturation point.
 */
import { Effect, FastCheck as fc } from "effect"
import { Exhausted, Failed, type ItemOutcome, Quarantined, Succeeded, Suspended } from "../../src/domain/Batch.js"
import { type BatchId, generateBatchId } from "../../src/domain/Ids.js"
import { Spend } from "../../src/domain/Quota.js"
import { BatchStore } from "../../src/services/BatchStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface BatchLedger extends Model.Ledger {
  readonly pools: Domain.Pools
  readonly batches: ReadonlyArray<BatchId>
}

const ledger = (): BatchLedger => ({
  ...Model.ledger(),
  pools: Domain.pools(),
  batches: [generateBatchId(), generateBatchId()],
})

// Mostly batch#0, so reservations and outcomes pile up on one batch.
const batchRef = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.constant(1))
const digest = fc.constantFrom("plan-1", "plan-2")
// Ordered by code point: "a" < "～" < "😀" (UTF-16 would put "😀" before "～").
const itemKey = fc.constantFrom("a", "～", "😀")
const detail = fc.constantFrom("x", "y")

const outcome: fc.Arbitrary<ItemOutcome> = fc.oneof(
  fc.constant(new Succeeded()),
  detail.map((d) => new Failed({ detail: d })),
  detail.map((d) => new Quarantined({ detail: d })),
  detail.map((d) => new Suspended({ detail: d })),
  detail.map((d) => new Exhausted({ limit: d })),
)

/** Mostly small; now and then the largest amount, so sums must saturate rather than overflow. */
const amount = fc.oneof(
  { weight: 5, arbitrary: fc.integer({ min: 0, max: 5 }) },
  { weight: 1, arbitrary: fc.constant(Number.MAX_SAFE_INTEGER) },
)
export const spend = fc.record({ tokens: amount, minorUnits: amount }).map((s) => new Spend(s))

const command = Model.commandFor<BatchLedger>()
const store = BatchStore

const open = command(fc.tuple(batchRef, digest), ([b, plan]) => ({
  show: Model.show("open", `batch#${b}`, plan),
  run: (l) => Effect.flatMap(store, (s) => s.open(Domain.pick(l.batches, b), plan)),
}))

const reserve = command(fc.tuple(batchRef, itemKey, Domain.ref(3)), ([b, key, run]) => ({
  show: Model.show("reserve", `batch#${b}`, key, `run#${run}`),
  run: (l) => Effect.flatMap(store, (s) => s.reserve(Domain.pick(l.batches, b), key, Domain.pick(l.pools.runs, run))),
}))

const commands = [
  // Opening and reserving are drawn twice as often: outcomes need a reserved item.
  ...Model.times(2, open),
  ...Model.times(2, reserve),
  command(batchRef, (b) => ({
    show: Model.show("planDigest", `batch#${b}`),
    run: (l) => Effect.flatMap(store, (s) => s.planDigest(Domain.pick(l.batches, b))),
  })),
  command(batchRef, (b) => ({
    show: Model.show("markExhausted", `batch#${b}`),
    run: (l) => Effect.flatMap(store, (s) => s.markExhausted(Domain.pick(l.batches, b))),
  })),
  command(batchRef, (b) => ({
    show: Model.show("isExhausted", `batch#${b}`),
    run: (l) => Effect.flatMap(store, (s) => s.isExhausted(Domain.pick(l.batches, b))),
  })),
  command(fc.tuple(batchRef, itemKey, outcome, spend), ([b, key, o, sp]) => ({
    show: Model.show("record", `batch#${b}`, key, o, sp),
    run: (l) => Effect.flatMap(store, (s) => s.record(Domain.pick(l.batches, b), key, o, sp)),
  })),
  command(batchRef, (b) => ({
    show: Model.show("cursor", `batch#${b}`),
    run: (l) => Effect.flatMap(store, (s) => s.cursor(Domain.pick(l.batches, b))),
  })),
  command(batchRef, (b) => ({
    show: Model.show("census", `batch#${b}`),
    run: (l) => Effect.flatMap(store, (s) => s.census(Domain.pick(l.batches, b))),
  })),
  command(fc.tuple(batchRef, Domain.limit), ([b, limit]) => ({
    show: Model.show("items", `batch#${b}`, limit),
    run: (l) => Effect.flatMap(store, (s) => s.items(Domain.pick(l.batches, b), limit)),
  })),
]

export const model: Model.StoreModel<BatchLedger> = { name: "BatchStore", ledger, commands }
