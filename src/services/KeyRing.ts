/**
 * KeyRing (§9.1): envelope encryption. Each scope (`<case>`, `<run>` or `event/<source>/<id>`
 * within the caller's tenant, so `<tenant>/<unit>` in full) has one AES-256 data key, stored only
 * wrapped by the operator's key-encryption key. Destroying a scope deletes its wrapped key, so
 * whatever was sealed under it, in every copy of the data, never opens again.
 *
 * Decision: `open` takes the scope, not a wrapped key. A wrapped key never leaves the key ring, so
 * no record, export or database backup carries one: a backup holding wrapped keys would open
 * with the KEK the operator still holds, and erasure would not reach it. For the same reason the
 * key ring's table belongs in a database whose backups are kept apart from (and shorter than)
 * the data's; see docs/operations.md, "Erasure".
 */
import { Context, type Effect } from "effect"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Destroyed, KekMismatch, KeyUnknown } from "../errors/ErasureError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>

/** A data key in the clear, for one scope of the caller's tenant. */
export interface DataKey {
  /** The scope within the tenant: `<case>`, `<run>` or `event/<source>/<id>`. */
  readonly scope: string
  /** 32 bytes of AES-256 key. */
  readonly key: Uint8Array
}

export class KeyRing extends Context.Tag("agentplane/KeyRing")<
  KeyRing,
  {
    /** The scope's data key, made and stored wrapped on first use (concurrent first uses get one key); `Destroyed` once the scope is destroyed. */
    readonly dataKey: (scope: string) => Op<DataKey, Destroyed | KekMismatch | Corrupt>
    /** The scope's existing data key; `KeyUnknown` when none was ever made here, `Destroyed` once destroyed. */
    readonly open: (scope: string) => Op<DataKey, Destroyed | KeyUnknown | KekMismatch | Corrupt>
    /** Deletes the scope's wrapped key and leaves a tombstone (also for a scope never used); idempotent, the first `at` and `reason` stand. */
    readonly destroy: (scope: string, at: Timestamp, reason: string) => Op<void>
  }
>() {}
