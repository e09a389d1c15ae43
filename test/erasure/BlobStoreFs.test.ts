/**
 * The BlobStore battery on the filesystem layer, plus what only a filesystem can do wrong: a
 * crash between laying the tombstone and unlinking the bytes.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import { Tenant } from "../../src/domain/Tenant.js"
import * as BlobStoreFs from "../../src/layers/BlobStoreFs.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import * as BlobStoreSuite from "../conformance/BlobStore.js"
import { at, bytes } from "../conformance/blob/Fixture.js"
import { assert } from "../support/Assert.js"
import { freshTenant } from "../support/Backend.js"

const root = join(inject("scratchDir"), `blobs-${randomUUID()}`)
const pathOf = (tenant: string, digest: string) => join(root, encodeURIComponent(tenant), digest.slice(0, 2), digest)

BlobStoreSuite.suiteOn<never>({
  name: "fs",
  layer: BlobStoreFs.layer({ root }),
  tamper: Option.some((digest, content) =>
    Effect.flatMap(Tenant, (tenant) => Effect.promise(() => fs.writeFile(pathOf(tenant, digest), content))),
  ),
  concurrentWriters: true,
})

describe("BlobStoreFs crashes", () => {
  it.effect("a tombstone laid over bytes a crash left behind hides them, and a re-run unlinks them", () =>
    Effect.gen(function* () {
      const store = yield* BlobStore
      const tenant = yield* Tenant
      const content = bytes("half erased")
      const digest = yield* store.put(content)
      // The crash: the tombstone is in place, the unlink never ran.
      const kept = yield* Effect.promise(() => fs.readFile(pathOf(tenant, digest)))
      yield* store.expire(digest, at(1), "erased")
      yield* Effect.promise(() => fs.writeFile(pathOf(tenant, digest), kept))
      assert.isFalse(yield* store.has(digest))
      assert.strictEqual((yield* Effect.flip(store.get(digest)))._tag, "BlobExpired")
      assert.isFalse(yield* store.expire(digest, at(2), "re-run"))
      const left = yield* Effect.promise(() =>
        fs.stat(pathOf(tenant, digest)).then(
          () => true,
          () => false,
        ),
      )
      assert.isFalse(left)
    }).pipe(Effect.provide(BlobStoreFs.layer({ root })), Effect.provideService(Tenant, freshTenant())),
  )
})
