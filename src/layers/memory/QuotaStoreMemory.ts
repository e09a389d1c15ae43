/**
 * QuotaStore in process memory (§5.6), written from the contract as the reference model the SQL
 * layers are compared against and as a public layer for users' tests.
 *
 * Every verb is atomic by construction: it reads the tenant, then does all of its reading,
 * checking and writing in one synchronous body (`Effect.suspend` returning an `Either`), so no
 * other fiber runs between the count and the insert of an admission. State is plain `Map`s keyed
 * by tenant first. The halt lives in `Halts`, shared with the journal store of the same build, so
 * it stops everything that shares the build's stores (a run's opening append included).
 */
import { Effect, Either, Layer, Option } from "effect"
import type { RunId } from "../../domain/Ids.js"
import * as Quota from "../../domain/Quota.js"
import type { Timestamp } from "../../domain/Time.js"
import { TooManyRuns } from "../../errors/QuotaError.js"
import { QuotaStore } from "../../services/QuotaStore.js"
import * as Halts from "./internal/Halts.js"
import { perTenantEither } from "./internal/Memory.js"

interface TenantQuotas {
  /** The running set: each member run with the instant it was first admitted. */
  readonly running: Map<RunId, Timestamp>
  /** Accrued spend by period key. */
  readonly spent: Map<string, Quota.Spend>
}

export const make = (halts: Halts.Halts = Halts.make()): Effect.Effect<typeof QuotaStore.Service> =>
  Effect.sync(() => store(halts))

const store = (halts: Halts.Halts): typeof QuotaStore.Service => {
  /** Runs `f` on the caller's tenant's quota state in one synchronous step. */
  const atomically = perTenantEither((): TenantQuotas => ({ running: new Map(), spent: new Map() }))

  return QuotaStore.of({
    reserve: (run, limit, at) =>
      atomically(({ running }, tenant) => {
        // A run already in keeps its slot (idempotent) and its first admission instant.
        if (running.has(run)) return Either.void
        // Counted and inserted in this one step, so no other admission moves the count between.
        if (Option.isSome(limit) && running.size >= limit.value) {
          return Either.left(new TooManyRuns({ tenant, running: running.size }))
        }
        running.set(run, at)
        return Either.void
      }),

    release: (run) =>
      atomically(({ running }) => {
        // Membership, not a tally: freeing a slot twice frees nothing the second time.
        running.delete(run)
        return Either.void
      }),

    setHalt: (reason) =>
      atomically((_, tenant) => {
        // None lifts the stop, a no-op when unset; some replaces any earlier reason.
        halts.set(tenant, reason)
        return Either.void
      }),

    halted: () => atomically((_, tenant) => Either.right(halts.get(tenant))),

    accrue: (period, spend) =>
      atomically(({ spent }) => {
        // Accruals sum, saturating at MAX_SAFE_INTEGER per unit.
        spent.set(period, Quota.add(spent.get(period) ?? Quota.ZERO, spend))
        return Either.void
      }),

    spent: (period) =>
      atomically(({ spent }) => {
        const total = spent.get(period) ?? Quota.ZERO
        return Either.right(new Quota.Spend({ tokens: total.tokens, minorUnits: total.minorUnits }))
      }),

    running: () => atomically(({ running }) => Either.right(running.size)),
  })
}

/** A QuotaStore in process memory, empty each time the layer is built. */
export const layer: Layer.Layer<QuotaStore> = Layer.effect(QuotaStore, make())
