/**
 * LogStore (§6.5): each tenant's transparency log. Seals take dense positions (`JournalStore.seal`,
 * `LogSequence`); this store integrates the sealed leaves into the Merkle tree later, in position
 * order, signs a checkpoint per integration, and proves inclusion and consistency from the stored
 * complete subtrees (`MerkleNodes`).
 */
import { Context, type Effect, type Option } from "effect"
import type { Digest } from "../domain/Digest.js"
import type { RunId } from "../domain/Ids.js"
import type { LogKey } from "../domain/LogKey.js"
import type { LogLeaf } from "../domain/LogLeaf.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type {
  CheckpointMalformed,
  NoteError,
  RunNotIntegrated,
  RunNotLogged,
  RunOutsideSize,
  SizeBeyondLog,
  SizesUnordered,
} from "../errors/LogError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

/** A checkpoint as stored: its size and root, the signed note (C2SP `tlog-checkpoint` text and signature), when it was signed. */
export interface StoredCheckpoint {
  readonly size: number
  readonly root: Digest
  readonly note: string
  readonly signedAt: Timestamp
}

/** What one integration did: the leaves it hashed in (0 when none waited, or another instance moved the size first) and the size it left. */
export interface Integration {
  readonly leaves: number
  readonly size: number
}

/** A run's inclusion proof: its leaf at `index` of the tree of `size`, and the RFC 9162 audit path, lowest level first. */
export interface Inclusion {
  readonly index: number
  readonly size: number
  readonly leaf: LogLeaf
  readonly proof: ReadonlyArray<Digest>
}

/** A sealed run's leaf at its log position. */
export interface Positioned {
  readonly index: number
  readonly leaf: LogLeaf
}

export class LogStore extends Context.Tag("agentplane/LogStore")<
  LogStore,
  {
    /** Hashes up to `max` sealed leaves from the integrated size on into the tree, and stores their subtrees, the new size and `key`'s checkpoint of it (signed at `now`) in one commit, only if the integrated size is still the one read: two instances integrate each leaf once, and a failure at any point stores nothing. */
    readonly integrate: (key: LogKey, now: Timestamp, max: number) => Read<Integration, NoteError | CheckpointMalformed>
    /** The latest checkpoint; a log with none yet first gets `key`'s checkpoint of the empty tree (size 0, the RFC 9162 empty root), signed at `now` and stored once: every caller of a race gets the one stored. */
    readonly signEmpty: (key: LogKey, now: Timestamp) => Read<StoredCheckpoint, NoteError | CheckpointMalformed>
    /** The latest checkpoint, or none before the first `signEmpty` or integration call (which signs the empty tree at size 0 even with no leaves). */
    readonly checkpoint: () => Read<Option.Option<StoredCheckpoint>>
    /** The checkpoint signed when the log reached `size`, or none if no integration ended there. */
    readonly checkpointAt: (size: number) => Read<Option.Option<StoredCheckpoint>>
    /** The run's leaf and its audit path in the tree of `size` leaves; `RunNotLogged` if the run is not sealed, `RunNotIntegrated` if no checkpoint covers it yet, `SizeBeyondLog` past the latest size, `RunOutsideSize` if `size` does not exceed its position. */
    readonly inclusionProof: (
      run: RunId,
      size: number,
    ) => Read<Inclusion, RunNotLogged | RunNotIntegrated | RunOutsideSize | SizeBeyondLog>
    /** Up to `limit` sealed leaves from position `from` on, ascending, each with its position: what an export lists (a store missing a position shows the gap). */
    readonly leaves: (from: number, limit: number) => Read<ReadonlyArray<Positioned>>
    /** The RFC 9162 consistency proof from the tree of `from` leaves to the tree of `to`; empty from 0 (every tree extends the empty one); `SizesUnordered` unless `0 <= from <= to`, `SizeBeyondLog` past the latest size. */
    readonly consistencyProof: (from: number, to: number) => Read<ReadonlyArray<Digest>, SizesUnordered | SizeBeyondLog>
  }
>() {}
