/**
 * What "no leaf lost, none repeated" means for a tenant's log, checked through the stores as an
 * auditor would: the latest checkpoint's root is RFC 9162's root over the first `size` sealed
 * leaves in seal order (a leaf hashed twice, skipped or moved changes it), every run below the
 * size proves its inclusion at its own position, none at or past it does, and every checkpoint
 * ever signed is consistent with the latest (so none was signed over another history). Shared by
 * the LogStore fault tests on memory and SQLite (`LogStore*.test.ts` here).
 */
import { Effect, Either, Option } from "effect"
import * as LogKey from "../../src/domain/LogKey.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as SignedNote from "../../src/domain/SignedNote.js"
import { LogStore, type StoredCheckpoint } from "../../src/services/LogStore.js"
import { assertConsistent, assertIncluded, DEPLOYMENT, type Sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"

/** The deployment key of `seed`: the same key in two processes that share the seed. */
export const keyOf = (seed: Uint8Array) =>
  Either.getOrThrow(LogKey.make(DEPLOYMENT, SignedNote.signer(`${DEPLOYMENT}/log`, seed)))

/** The leaf hash of a sealed run, as the log must have hashed it. */
export const leafHash = (s: Sealed) =>
  LogLeaf.hash(new LogLeaf.LogLeaf({ run: s.run, chainHead: s.head, records: s.records, outcome: s.outcome }))

/** How many complete subtrees (leaves included) a tree of `size` leaves stores: Σ⌊size/2^ℓ⌋ = 2·size − popcount(size). */
export const nodesOfSize = (size: number) => {
  let n = 0
  for (let width = 1; width <= size; width *= 2) n += Math.floor(size / width)
  return n
}

/**
 * Asserts the log of the current tenant holds the first `size` of `runs` (all sealed, in seal
 * order) exactly once each, and returns its latest checkpoint. `sizes`: the sizes a checkpoint
 * may have been signed at (by default every size up to the latest), each checked for consistency.
 */
export const assertExactlyOnce = (runs: ReadonlyArray<Sealed>, sizes?: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const latest = yield* log.checkpoint()
    if (Option.isNone(latest)) {
      for (const s of runs)
        assert.isTrue(
          Either.isLeft(yield* Effect.either(log.inclusionProof(s.run, 1))),
          `no checkpoint, yet ${s.run} proves its inclusion`,
        )
      return Option.none<StoredCheckpoint>()
    }
    const cp = latest.value
    assert.isTrue(cp.size <= runs.length, `a log of ${cp.size} from ${runs.length} sealed runs`)
    assert.strictEqual(cp.root, Merkle.root(runs.slice(0, cp.size).map(leafHash)), `the root at ${cp.size}`)
    for (const [position, s] of runs.entries()) {
      if (position < cp.size) yield* assertIncluded(s, position, cp)
      else
        assert.isTrue(
          Either.isLeft(yield* Effect.either(log.inclusionProof(s.run, cp.size))),
          `${s.run} at ${position} proves inclusion in a log of ${cp.size}`,
        )
    }
    const candidates = sizes ?? Array.from({ length: cp.size }, (_, i) => i + 1)
    for (const size of candidates) {
      const older = yield* log.checkpointAt(size)
      if (size > cp.size)
        assert.isTrue(Option.isNone(older), `a checkpoint at ${size} beyond the latest size ${cp.size}`)
      else if (Option.isSome(older)) yield* assertConsistent(older.value, cp)
    }
    return latest
  })
