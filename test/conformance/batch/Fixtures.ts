/**
 * Small builders for the BatchStore battery; seed data always goes through the store itself.
 */
import type { Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { Exhausted, Failed, type ItemOutcome, Quarantined, Succeeded, Suspended } from "../../../src/domain/Batch.js"
import { type BatchId, generateBatchId, generateRunId, type RunId } from "../../../src/domain/Ids.js"
import { Spend } from "../../../src/domain/Quota.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import type { Backend, Stores } from "../../support/Backend.js"

/** The `it.effect` the BatchStore battery receives. */
export type Tester = Vitest.Tester<BatchStore | Stores>

/** A separate client with a fresh pool of `size`, for race properties. */
export const pooled = (backend: Backend, size: number) => backend.pooled(size)

export const spend = (tokens: number, minorUnits: number) => new Spend({ tokens, minorUnits })

export const succeeded = new Succeeded()
export const failed = (detail = "boom") => new Failed({ detail })
export const quarantined = (detail = "poison") => new Quarantined({ detail })
export const suspended = (detail = "awaiting approval") => new Suspended({ detail })
export const exhausted = (limit = "tokens") => new Exhausted({ limit })

/** Opens a fresh batch with plan digest `plan`. */
export const openBatch = (plan = "plan-a") =>
  Effect.gen(function* () {
    const id = generateBatchId()
    yield* Effect.flatMap(BatchStore, (s) => s.open(id, plan))
    return id
  })

/** Reserves `key` in `batch` for a fresh run and returns the run the store kept. */
export const reserve = (batch: BatchId, key: string, run: RunId = generateRunId()) =>
  Effect.flatMap(BatchStore, (s) => s.reserve(batch, key, run))

/** Reserves `key` and records `outcome` (none: left in flight) with `spent`. */
export const item = (batch: BatchId, key: string, outcome?: ItemOutcome, spent = spend(0, 0)) =>
  Effect.gen(function* () {
    const store = yield* BatchStore
    yield* store.reserve(batch, key, generateRunId())
    if (outcome !== undefined) yield* store.record(batch, key, outcome, spent)
  })
