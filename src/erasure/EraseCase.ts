/**
 * `eraseCase` (§9.1): the case is the unit of erasure. Its blobs are expired first (tombstones,
 * the first expiry standing), and only then are its key scopes destroyed: the case's own and
 * those of the runs attached to it, since a run's records written before it was bound to the
 * case are sealed under the run's scope. Every step is idempotent and the key goes last, so an
 * erasure killed at any point is finished by running it again, and ends in the same state.
 */
import { Effect, Option } from "effect"
import type { CaseId } from "../domain/Ids.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import { PayloadsStayReadable } from "../errors/ErasureError.js"
import { type Backend, type Corrupt, NotFound } from "../errors/StoreError.js"
import { BlobStore } from "../services/BlobStore.js"
import { CaseStore } from "../services/CaseStore.js"
import { KeyRing } from "../services/KeyRing.js"

/**
 * Erases the case and returns how many of its blobs this call expired (0 on a re-run of a
 * finished erasure, an ordinary answer); a case that does not exist is `NotFound`. Without a key
 * ring the payloads stay readable, so it is `PayloadsStayReadable` and changes nothing, unless
 * `options.blobsOnly` asks for the blobs alone.
 */
export const eraseCase = (
  kase: CaseId,
  at: Timestamp,
  reason: string,
  options: { readonly blobsOnly?: boolean } = {},
): Effect.Effect<number, Backend | Corrupt | NotFound | PayloadsStayReadable, Tenant | CaseStore | BlobStore> =>
  Effect.gen(function* () {
    const cases = yield* CaseStore
    const blobs = yield* BlobStore
    const ring = yield* Effect.serviceOption(KeyRing)
    const found = yield* cases.case(kase)
    if (Option.isNone(found)) return yield* new NotFound({ what: kase })
    if (Option.isNone(ring) && options.blobsOnly !== true) return yield* new PayloadsStayReadable({ case: kase })
    const digests = yield* cases.blobsOf(kase)
    let expired = 0
    // One at a time, in `blobsOf` order: a kill leaves a prefix expired, which a re-run skips.
    for (const digest of digests) if (yield* blobs.expire(digest, at, reason)) expired++
    if (Option.isSome(ring)) {
      yield* ring.value.destroy(kase, at, reason)
      for (const run of found.value.runs) yield* ring.value.destroy(run, at, reason)
    }
    return expired
  })
