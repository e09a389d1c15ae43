/**
 * Builders for the LogStore battery: a deployment key, sealed runs (through the journal store,
 * as every seed goes through the stores), and the checks an auditor makes offline.
 */
import { randomBytes } from "node:crypto"
import { Effect, Either } from "effect"
import * as Checkpoint from "../../../src/domain/Checkpoint.js"
import type { Digest } from "../../../src/domain/Digest.js"
import type { RunId } from "../../../src/domain/Ids.js"
import type * as Journal from "../../../src/domain/Journal.js"
import * as LogKey from "../../../src/domain/LogKey.js"
import * as LogLeaf from "../../../src/domain/LogLeaf.js"
import * as MerkleProof from "../../../src/domain/MerkleProof.js"
import * as SignedNote from "../../../src/domain/SignedNote.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { Timestamp } from "../../../src/domain/Time.js"
import type { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore, type StoredCheckpoint } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { concluded, leased, note, written } from "../journal/Fixtures.js"

export const DEPLOYMENT = "agentplane.test"
export const NOW = Timestamp.make(1_800_000_000)

/** A fresh deployment key (its own seed) and its verifier. */
export const deploymentKey = () => {
  const signer = SignedNote.signer(`${DEPLOYMENT}/log`, randomBytes(32))
  const key = Either.getOrThrow(LogKey.make(DEPLOYMENT, signer))
  return { key, verifier: signer as SignedNote.VerifierKey }
}

export interface Sealed {
  readonly run: RunId
  readonly head: Digest
  readonly records: number
  readonly outcome: Journal.RunOutcome
}

/** Seals a new run the `i`-th way of three (unwritten and bare, bare after a record, with a last batch). */
export const sealed = (store: typeof JournalStore.Service, i: number) =>
  Effect.gen(function* () {
    if (i % 3 === 0) {
      const r = yield* leased()
      return { run: r.run, head: yield* store.seal(r.run, r.epoch, "swept"), records: 0, outcome: "swept" } as Sealed
    }
    const r = yield* written(2)
    const last = i % 3 === 2 ? ([note("last"), concluded("succeeded")] as const) : undefined
    const head = yield* store.seal(r.run, r.epoch, "succeeded", last)
    return { run: r.run, head, records: last === undefined ? 2 : 4, outcome: "succeeded" } as Sealed
  })

/** The checkpoint's note, opened with the deployment's verifier: it must be this tenant's, of this size and root. */
export const opened = (stored: StoredCheckpoint, verifier: SignedNote.VerifierKey) =>
  Effect.gen(function* () {
    const tenant = yield* Tenant
    const cp = Either.getOrThrow(Checkpoint.open(stored.note, [verifier]))
    assert.strictEqual(cp.origin, LogKey.origin(DEPLOYMENT, tenant))
    assert.strictEqual(cp.size, stored.size)
    assert.strictEqual(cp.root, stored.root)
    return cp
  })

/** Asserts the run's proof at `checkpoint` verifies against its root, and its leaf is the run's seal. */
export const assertIncluded = (s: Sealed, position: number, checkpoint: StoredCheckpoint) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const inclusion = yield* log.inclusionProof(s.run, checkpoint.size)
    assert.strictEqual(inclusion.index, position)
    assert.deepStrictEqual(
      {
        run: inclusion.leaf.run,
        head: inclusion.leaf.chainHead,
        records: inclusion.leaf.records,
        outcome: inclusion.leaf.outcome,
      },
      { run: s.run, head: s.head, records: s.records, outcome: s.outcome },
    )
    const verified = MerkleProof.verifyInclusion(
      inclusion.index,
      checkpoint.size,
      LogLeaf.hash(inclusion.leaf),
      inclusion.proof,
      checkpoint.root,
    )
    assert.isTrue(Either.isRight(verified), `inclusion of ${s.run} at ${checkpoint.size}: ${String(verified)}`)
  })

/** Asserts the log proves `older` a prefix of `newer` (an empty `older` with no proof). */
export const assertConsistent = (older: StoredCheckpoint, newer: StoredCheckpoint) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const proof = yield* log.consistencyProof(older.size, newer.size)
    const verified = MerkleProof.verifyExtends(older.size, newer.size, proof, older.root, newer.root)
    assert.isTrue(Either.isRight(verified), `${older.size} → ${newer.size}: ${String(verified)}`)
  })
