/**
 * BlobStore in memory (§9.1): a map per tenant from digest to bytes or tombstone, for users' own
 * tests and as the reference the other layers are compared against. Bytes are copied in and out,
 * so a caller changing its buffer afterwards changes nothing stored.
 */
import { Effect, Layer, Option } from "effect"
import * as Digest from "../../domain/Digest.js"
import { BlobExpired } from "../../errors/ErasureError.js"
import { BlobStore, type Tombstone } from "../../services/BlobStore.js"
import { perTenant } from "./internal/Memory.js"

type Entry = { readonly _tag: "Bytes"; readonly bytes: Uint8Array } | ({ readonly _tag: "Expired" } & Tombstone)

/** A fresh, empty BlobStore each time the layer is built. */
export const make: Effect.Effect<typeof BlobStore.Service> = Effect.sync(() => {
  const atomically = perTenant(() => new Map<Digest.Digest, Entry>())
  const expired = (digest: Digest.Digest, t: Tombstone) => new BlobExpired({ digest, at: t.at, reason: t.reason })

  return BlobStore.of({
    put: (bytes) =>
      atomically((blobs) => {
        const digest = Digest.of(bytes)
        const found = blobs.get(digest)
        if (found?._tag === "Expired") return Effect.fail(expired(digest, found))
        if (found === undefined) blobs.set(digest, { _tag: "Bytes", bytes: Uint8Array.from(bytes) })
        return Effect.succeed(digest)
      }),

    get: (digest) =>
      atomically((blobs) => {
        const found = blobs.get(digest)
        if (found === undefined) return Effect.succeed(Option.none())
        if (found._tag === "Expired") return Effect.fail(expired(digest, found))
        return Effect.succeed(Option.some(Uint8Array.from(found.bytes)))
      }),

    has: (digest) => atomically((blobs) => Effect.succeed(blobs.get(digest)?._tag === "Bytes")),

    expire: (digest, at, reason) =>
      atomically((blobs) => {
        if (blobs.get(digest)?._tag === "Expired") return Effect.succeed(false)
        blobs.set(digest, { _tag: "Expired", at, reason })
        return Effect.succeed(true)
      }),

    tombstone: (digest) =>
      atomically((blobs) => {
        const found = blobs.get(digest)
        return Effect.succeed(
          found?._tag === "Expired" ? Option.some({ at: found.at, reason: found.reason }) : Option.none(),
        )
      }),
  })
})

export const layer: Layer.Layer<BlobStore> = Layer.effect(BlobStore, make)
