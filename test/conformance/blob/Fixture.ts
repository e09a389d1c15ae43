/**
 * What the BlobStore battery runs against: a layer with the store, and where the backend keeps
 * bytes a test can reach, a way to change stored bytes behind the store's back.
 */
import type { Vitest } from "@effect/vitest"
import type { Effect, Layer, Option } from "effect"
import type { Digest } from "../../../src/domain/Digest.js"
import type { Tenant } from "../../../src/domain/Tenant.js"
import * as Time from "../../../src/domain/Time.js"
import type { BlobStore } from "../../../src/services/BlobStore.js"

export interface BlobFixture<R> {
  readonly name: string
  readonly layer: Layer.Layer<BlobStore | R, unknown>
  /** Overwrites the bytes stored under `digest` (the caller's tenant) with `bytes`; none where nothing is reachable. */
  readonly tamper: Option.Option<(digest: Digest, bytes: Uint8Array) => Effect.Effect<void, unknown, Tenant | R>>
  /** Statements of concurrent fibers really interleave. */
  readonly concurrentWriters: boolean
}

export type Tester<R> = Vitest.Tester<BlobStore | R>

export const at = (n: number) => Time.Timestamp.make(1_800_000_000 + n)

export const bytes = (text: string) => new TextEncoder().encode(text)
