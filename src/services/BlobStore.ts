/**
 * BlobStore (§9.1): content-addressed bytes kept outside the chain, per tenant. The digest is
 * the SHA-256 of the bytes, so a case links an artifact (`CaseStore.linkBlob`) by what it is, and
 * erasure expires it by the same name. Identical bytes under two tenants are two blobs: one
 * tenant's erasure never reaches another's copy.
 */
import { Context, type Effect, type Option } from "effect"
import type { Digest } from "../domain/Digest.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { BlobExpired } from "../errors/ErasureError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>

/** Why a blob is gone: the first expiry's instant and reason. */
export interface Tombstone {
  readonly at: Timestamp
  readonly reason: string
}

export class BlobStore extends Context.Tag("agentplane/BlobStore")<
  BlobStore,
  {
    /** Stores the bytes under their SHA-256 and returns it; idempotent; bytes whose digest was expired fail with `BlobExpired`, storing nothing. */
    readonly put: (bytes: Uint8Array) => Op<Digest, BlobExpired>
    /** The bytes stored under `digest`, checked against it (a mismatch is `Corrupt`); none when never stored or lost; `BlobExpired` after expiry. */
    readonly get: (digest: Digest) => Op<Option.Option<Uint8Array>, BlobExpired | Corrupt>
    /** True when bytes are stored under `digest` and it was never expired; reads no content. */
    readonly has: (digest: Digest) => Op<boolean>
    /** Deletes the bytes and leaves a tombstone, also for a digest never stored; `true` when this call laid it, `false` when an earlier expiry stands. */
    readonly expire: (digest: Digest, at: Timestamp, reason: string) => Op<boolean>
    /** The tombstone of an expired digest; none when it was never expired. */
    readonly tombstone: (digest: Digest) => Op<Option.Option<Tombstone>, Corrupt>
  }
>() {}
