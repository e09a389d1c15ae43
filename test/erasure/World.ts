/**
 * The erasure tests' world: a backend's stores and raw client, the table-backed BlobStore in the
 * same database, and a key ring in a SQLite database of its own (as a deployment that wants
 * erasure to reach its backups keeps it), plus seeding through the sealing stores.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { join } from "node:path"
import { Effect, Layer, Option } from "effect"
import { inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import type { Digest } from "../../src/domain/Digest.js"
import { type CaseId, type Epoch, generateRunId, type RunId } from "../../src/domain/Ids.js"
import type { Json } from "../../src/domain/Json.js"
import * as Time from "../../src/domain/Time.js"
import * as Kek from "../../src/erasure/Kek.js"
import * as SealedStores from "../../src/erasure/SealedStores.js"
import * as BlobStoreSql from "../../src/layers/BlobStoreSql.js"
import * as KeyRingSql from "../../src/layers/KeyRingSql.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { admitted, effectKey, entry, note, started } from "../conformance/journal/Fixtures.js"
import type * as Backend from "../support/Backend.js"

export const at = (n: number) => Time.Timestamp.make(1_800_000_000 + n)

/** A key ring on a SQLite file of its own, under `kek`. */
export const keyRing = (kek: Kek.Kek, filename = join(inject("scratchDir"), `keys-${randomUUID()}.db`)) =>
  KeyRingSql.layer(kek).pipe(
    // Fresh: layers are shared by reference within a build, and the stores' database needs its own run.
    Layer.provide(Layer.provideMerge(Layer.fresh(Migrations.layer), SqliteBackend.layerClient({ filename }))),
  )

/** The backend's stores and client, its `blobs` table and a key ring of its own. */
export const world = (backend: Backend.Backend, kek = Kek.make(randomBytes(32))) => {
  const sql = Option.getOrThrow(backend.sql)
  return Layer.mergeAll(Layer.provideMerge(BlobStoreSql.layer, sql.layer), keyRing(kek))
}

export interface Seeded {
  readonly kase: CaseId
  readonly run: RunId
  /** The epoch of the run's lease, still held. */
  readonly epoch: Epoch
  readonly blobs: ReadonlyArray<Digest>
  readonly secret: string
}

/**
 * A case holding `secret` in its state, a run attached to it whose records carry it in every
 * sealed field (the admission before the run is bound, so under the run's scope), and `blobs`
 * artifacts linked to it; written through the sealing stores.
 */
export const seed = (secret: string, blobCount = 1) =>
  SealedStores.sealing(
    Effect.gen(function* () {
      const cases = yield* CaseStore
      const journal = yield* JournalStore
      const blobs = yield* BlobStore
      const opened = yield* cases.correlateOrOpen("claim", [CorrelationKey.make("claim", randomUUID())], at(1))
      const kase = opened.case
      const fresh = Option.getOrThrow(yield* cases.case(kase))
      yield* cases.putState(kase, fresh.version, { diagnosis: secret } satisfies Json)
      const run = generateRunId()
      yield* cases.attachRun(kase, run)
      const lease = yield* journal.acquire(run, "worker", 60)
      const ek = effectKey()
      const input = admitted()
      yield* journal.append(run, lease.epoch, [
        entry({ ...(input.kind as Extract<typeof input.kind, { kind: "RunAdmitted" }>), input: { text: secret } }),
        note(secret, { case: kase }),
        entry({ ...(started(ek).kind as object), descriptor: { args: secret } } as never, { case: kase, effect: ek }),
        entry(
          { kind: "EffectDone", output: { reply: secret }, source: "live", spend: null, declared: null },
          { case: kase, effect: ek },
        ),
      ])
      const digests: Array<Digest> = []
      for (let i = 0; i < blobCount; i++) {
        const digest = yield* blobs.put(new TextEncoder().encode(`${secret} scan ${i}`))
        yield* cases.linkBlob(kase, digest, at(2 + i))
        digests.push(digest)
      }
      return { kase, run, epoch: lease.epoch, blobs: digests, secret } satisfies Seeded
    }),
  )
