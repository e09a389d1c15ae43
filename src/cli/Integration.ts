/**
 * The log's integration step (§6.5): sealed leaves hashed into each tenant's tree and a new
 * checkpoint signed, in batches, after the seals (Tessera's integration). `serve --log-key` runs
 * `loop` beside the server for every tenant of its credential table; `agentplane sweep
 * --log-key` runs `catchUp` for its tenant after the tick. Several instances may run it at once:
 * the store integrates each leaf once (`LogStore.integrate`).
 */
import { Duration, Effect, Schedule } from "effect"
import type * as LogKey from "../domain/LogKey.js"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { LogStore } from "../services/LogStore.js"

/** Leaves per integration: one transaction's subtrees (about twice as many rows). */
export const BATCH = 1_024

/** Batches per catch-up at most, so one tenant's backlog cannot hold the others' turn for long. */
const ROUNDS = 64

/** Integrates what the tenant has sealed, a batch at a time, until a batch comes back short. */
export const catchUp = (key: LogKey.LogKey) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    let integrated = 0
    let size = 0
    for (let round = 0; round < ROUNDS; round++) {
      const now = Time.fromMillis(yield* Effect.clockWith((c) => c.currentTimeMillis))
      const done = yield* log.integrate(key, now, BATCH)
      integrated += done.leaves
      size = done.size
      if (done.leaves < BATCH) break
    }
    return { integrated, size }
  })

/** Catches up every tenant of `tenants` every `everySecs`, forever; a failure is logged and the next period tries again. */
export const loop = (tenants: ReadonlyArray<Tenant.TenantId>, key: LogKey.LogKey, everySecs: number) =>
  Effect.forEach(tenants, (t) =>
    catchUp(key).pipe(
      Effect.provideService(Tenant.Tenant, t),
      Effect.catchAllCause((cause) =>
        Effect.logError("agentplane.log.integrate_failed", cause).pipe(Effect.annotateLogs({ tenant: t })),
      ),
    ),
  ).pipe(Effect.repeat(Schedule.spaced(Duration.seconds(everySecs))), Effect.zipRight(Effect.never))
