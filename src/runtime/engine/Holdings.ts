/**
 * The leases an engine holds while it works under them, renewed together by one fiber every
 * third of the TTL, so each is renewed within that period of being taken. A fiber per lease,
 * forked and interrupted around every wake-up (one while it queued for a permit, one while it
 * ran), cost a wake-up more CPU than its journal read. An entry leaves when its holder lets go or
 * a renewal fails (the holder learns it at its next write, fenced), as a lease's own fiber used
 * to stop. Each `hold` is an entry of its own.
 *
 * A third in milliseconds, not whole seconds of it: the store keeps expiries in whole seconds
 * (`floor(now) + ttl`), so a 2 s lease renewed each second lapsed whenever a renewal slipped past
 * a second boundary, and a 1 s lease lapsed before its first renewal. Every 667 ms a 2 s lease
 * always has a second left; a 1 s lease can still lapse at a second boundary, so 2 s is the
 * shortest that holds.
 */
import { Duration, Effect, type Scope } from "effect"
import type { Epoch, RunId } from "../../domain/Ids.js"
import { Tenant, type TenantId } from "../../domain/Tenant.js"
import type { JournalStore } from "../../services/JournalStore.js"
import type { Holding } from "../Wakeup.js"

export interface Holdings {
  /** Renews `run`'s lease at `epoch` until `unhold`; `taken` says whether a new run's lease exists yet. */
  readonly hold: (run: RunId, epoch: Epoch, tenant: TenantId, taken?: () => boolean) => Holding
  /** Stops renewing; nothing for `undefined` or a holding already let go. */
  readonly unhold: (holding: Holding | undefined) => void
}

/** The set and its renewing fiber, which lives as long as the scope. */
export const make = (
  journal: JournalStore["Type"],
  owner: string,
  ttl: number,
): Effect.Effect<Holdings, never, Scope.Scope> =>
  Effect.gen(function* () {
    const holdings = new Set<Holding>()
    const unhold = (holding: Holding | undefined) => {
      if (holding !== undefined) holdings.delete(holding)
    }
    const renewHeld = Effect.suspend(() =>
      Effect.forEach(
        // A new run's lease exists once its first commit took it (`Writer` `open`); until then
        // there is nothing to renew, and a renewal would fail and drop the holding.
        [...holdings].filter((h) => h.taken === undefined || h.taken()),
        (h) =>
          journal.renew(h.run, owner, h.epoch, ttl).pipe(
            Effect.provideService(Tenant, h.tenant),
            Effect.catchAllCause(() => Effect.sync(() => unhold(h))),
          ),
        { concurrency: 8, discard: true },
      ),
    )
    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(Math.floor((ttl * 1000) / 3))), renewHeld)),
    )
    return {
      hold: (run, epoch, tenant, taken) => {
        const holding = { run, epoch, tenant, ...(taken === undefined ? {} : { taken }) }
        holdings.add(holding)
        return holding
      },
      unhold,
    }
  })
