/**
 * What `verify(run)` adds to the chain check (§6.5): the run's chain, recomputed from `raw`,
 * ends at the head its log leaf commits to, over as many records, and the leaf is in the tree of
 * the latest checkpoint. A run whose records were rewritten after the seal (the chain still
 * links, but to another head) or whose leaf was swapped fails here even though its chain alone
 * verifies.
 */
import { Either } from "effect"
import { ProofInvalid } from "../errors/LogError.js"
import type { Digest } from "./Digest.js"
import type { Head } from "./Journal.js"
import * as LogLeaf from "./LogLeaf.js"
import * as MerkleProof from "./MerkleProof.js"

/** A run's leaf at `index` with its audit path in the tree of `size` leaves. */
export interface Included {
  readonly index: number
  readonly size: number
  readonly leaf: LogLeaf.LogLeaf
  readonly proof: ReadonlyArray<Digest>
}

/** Whether the recomputed `head` is the one the leaf commits to, and the leaf is in the tree whose root is `root`. */
export const checkRun = (head: Head, included: Included, root: Digest): Either.Either<void, ProofInvalid> => {
  const { leaf } = included
  if (leaf.chainHead !== head.hash || leaf.records !== head.seq)
    return Either.left(
      new ProofInvalid({
        proof: "inclusion",
        detail: `the log's leaf commits to ${leaf.records} records ending at ${leaf.chainHead}, but the journal recomputes ${head.seq} ending at ${head.hash}`,
      }),
    )
  return MerkleProof.verifyInclusion(included.index, included.size, LogLeaf.hash(leaf), included.proof, root)
}
