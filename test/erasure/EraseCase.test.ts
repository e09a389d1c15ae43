/**
 * Erasure's acceptance (§9.1, issue 18): after `eraseCase`, no sealed payload of the case opens
 * from the live store, from a copy of its rows taken before (what an export carries: `raw` and
 * the stored state), or from a backup of the database taken before; every chain still verifies;
 * the tenant's other cases are untouched; and an erasure killed after any of its steps, then run
 * again, ends in the state an uninterrupted one leaves.
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Exit, Layer, Option, Schema } from "effect"
import { inject } from "vitest"
import type { Json } from "../../src/domain/Json.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { eraseCase } from "../../src/erasure/EraseCase.js"
import * as Sealed from "../../src/erasure/Sealed.js"
import * as SealedStores from "../../src/erasure/SealedStores.js"
import * as Sealer from "../../src/erasure/Sealer.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { KeyRing } from "../../src/services/KeyRing.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { asFreshTenant } from "../support/Backend.js"
import { at, type Seeded, seed, world } from "./World.js"

const Rows = Schema.Array(Schema.Struct({ raw: Schema.Uint8ArrayFromSelf }))
const States = Schema.Array(Schema.Struct({ state: Schema.String }))

/** Every sealed string anywhere inside a JSON value. */
const sealedIn = (value: unknown): ReadonlyArray<string> =>
  Sealed.isSealed(value)
    ? [value]
    : typeof value === "object" && value !== null
      ? Object.values(value).flatMap(sealedIn)
      : []

/** The case's rows as an export or a row copy holds them: each record's `raw`, and the stored state. */
const copyRows = (s: Seeded) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tenant = yield* Tenant
    const raws = yield* sql`SELECT raw FROM journal WHERE tenant = ${tenant} AND run_id = ${s.run} ORDER BY seq`.pipe(
      Effect.flatMap(Schema.decodeUnknown(Rows)),
    )
    const [state] = yield* sql`SELECT state FROM cases WHERE tenant = ${tenant} AND case_id = ${s.kase}`.pipe(
      Effect.flatMap(Schema.decodeUnknown(States)),
    )
    const bodies = raws.map((r) => JSON.parse(Buffer.from(r.raw).toString("utf8")) as unknown)
    return { bodies, state: JSON.parse(state?.state ?? "null") as Json, raw: raws.map((r) => Buffer.from(r.raw)) }
  })

/** What each sealed value of a copy opens to through the live key ring (a destroyed scope's stays sealed). */
const openAll = (values: ReadonlyArray<string>) =>
  Effect.flatMap(KeyRing, (ring) =>
    Effect.forEach(values, (v) => Sealer.make(ring).open(Either.getOrThrow(Sealed.scopeOf(v)))(v)),
  )

const suite = (name: string, backend: () => Backend.Backend, backup: boolean) =>
  describe(`eraseCase (${name})`, () => {
    layer(world(backend()), { excludeTestServices: true })((it) => {
      it.effect(
        "nothing of the case opens afterwards, live or from copies taken before; chains verify; the other case is untouched",
        () =>
          Effect.gen(function* () {
            const journal = yield* JournalStore
            const blobs = yield* BlobStore
            const ring = yield* KeyRing
            const a = yield* seed(`A-secret-${randomUUID()}`)
            const b = yield* seed(`B-secret-${randomUUID()}`)
            const headA = yield* journal.verify(a.run)
            const headB = yield* journal.verify(b.run)
            const copy = yield* copyRows(a)
            const sealedA = [...copy.bodies.flatMap(sealedIn), ...sealedIn(copy.state)]
            // Four sealed record fields and the state; the plaintext is nowhere in the bytes.
            assert.strictEqual(sealedA.length, 5)
            for (const raw of copy.raw) assert.strictEqual(raw.indexOf(a.secret), -1)
            // Before erasure the copy does open, so what follows can fail.
            const before = yield* openAll(sealedA)
            assert.isTrue(before.every((v) => JSON.stringify(v).includes(a.secret)))
            const file = join(inject("scratchDir"), `backup-${randomUUID()}.db`)
            if (backup) yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM INTO ${file}`)

            assert.strictEqual(yield* eraseCase(a.kase, at(100), "customer request"), 1)

            // From the copy taken before: every sealed value stays sealed.
            const after = yield* openAll(sealedA)
            assert.deepStrictEqual(after, sealedA)
            for (const v of sealedA) {
              const scope = Either.getOrThrow(Sealed.scopeOf(v))
              assert.strictEqual((yield* Effect.flip(ring.open(scope)))._tag, "Destroyed")
            }
            // From the live store, through the sealing stores.
            const live = yield* SealedStores.sealing(
              Effect.gen(function* () {
                const records = yield* (yield* JournalStore).read(a.run, 1)
                const kase = Option.getOrThrow(yield* (yield* CaseStore).case(a.kase))
                return { records, kase }
              }),
            )
            assert.isFalse(JSON.stringify(live.records.map((r) => r.kind)).includes(a.secret))
            assert.strictEqual(live.records.flatMap((r) => sealedIn(r.kind)).length, 4)
            assert.isTrue(Sealed.isSealed(live.kase.state))
            assert.strictEqual((yield* Effect.flip(blobs.get(first(a))))._tag, "BlobExpired")
            // From the backup, read through its own stores with the live key ring.
            if (backup) {
              const tenant = yield* Tenant
              const fromBackup = yield* SealedStores.sealing(
                Effect.flatMap(JournalStore, (j) => j.read(a.run, 1)),
              ).pipe(
                Effect.provide(
                  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(
                    Layer.provide(SqliteBackend.layerClient({ filename: file })),
                  ),
                ),
                Effect.provideService(Tenant, tenant),
              )
              assert.strictEqual(fromBackup.length, 4)
              assert.isFalse(JSON.stringify(fromBackup.map((r) => r.kind)).includes(a.secret))
            }
            // Every chain verifies, to the same heads.
            assert.deepStrictEqual(yield* journal.verify(a.run), headA)
            assert.deepStrictEqual(yield* journal.verify(b.run), headB)
            // The other case reads as written.
            const other = yield* SealedStores.sealing(
              Effect.gen(function* () {
                const records = yield* (yield* JournalStore).read(b.run, 1)
                const kase = Option.getOrThrow(yield* (yield* CaseStore).case(b.kase))
                return { records, kase }
              }),
            )
            assert.deepStrictEqual(other.kase.state, { diagnosis: b.secret })
            assert.strictEqual(other.records.flatMap((r) => sealedIn(r.kind)).length, 0)
            assert.strictEqual(JSON.stringify(other.records.map((r) => r.kind)).split(b.secret).length - 1, 4)
            assert.isTrue(yield* blobs.has(first(b)))
            // A re-run finds nothing left to expire.
            assert.strictEqual(yield* eraseCase(a.kase, at(200), "again"), 0)
          }).pipe(asFreshTenant),
      )

      it.effect("a kill after any step of an erasure, then a re-run, ends as an uninterrupted erasure does", () =>
        Effect.gen(function* () {
          const blobs = yield* BlobStore
          const ring = yield* KeyRing
          // Two blobs, then two scopes (the case's and its run's): four steps.
          const steps = 4
          const finalState = (s: Seeded) =>
            Effect.gen(function* () {
              const tombs = yield* Effect.forEach(s.blobs, (d) => blobs.tombstone(d))
              const keys = yield* Effect.forEach([s.kase as string, s.run as string], (scope) =>
                Effect.map(Effect.either(ring.open(scope)), (e) =>
                  e._tag === "Right"
                    ? "live"
                    : e.left._tag === "Destroyed"
                      ? { at: e.left.at, reason: e.left.reason }
                      : e.left._tag,
                ),
              )
              const present = yield* Effect.forEach(s.blobs, (d) => blobs.has(d))
              return { tombs, keys, present }
            })
          const reference = yield* seed(`ref-${randomUUID()}`, 2)
          yield* eraseCase(reference.kase, at(7), "erased")
          const expected = yield* finalState(reference)
          for (let k = 0; k <= steps; k++) {
            const s = yield* seed(`kill-${k}-${randomUUID()}`, 2)
            let done = 0
            const gate = Effect.suspend(() => (done++ >= k ? Effect.interrupt : Effect.void))
            const crashing = Effect.provideService(
              Effect.provideService(eraseCase(s.kase, at(7), "erased"), BlobStore, {
                ...blobs,
                expire: (d, when, why) => Effect.zipRight(gate, blobs.expire(d, when, why)),
              }),
              KeyRing,
              { ...ring, destroy: (scope, when, why) => Effect.zipRight(gate, ring.destroy(scope, when, why)) },
            )
            const exit = yield* Effect.exit(crashing)
            assert.strictEqual(Exit.isInterrupted(exit), k < steps, `kill after ${k} steps`)
            const killed = yield* finalState(s)
            // The key goes last: while a blob is still present, no scope is destroyed.
            if (killed.present.some(Boolean))
              assert.isTrue(killed.keys.every((key) => key !== null && typeof key === "string"))
            const again = yield* eraseCase(s.kase, at(7), "erased")
            assert.strictEqual(again, Math.max(0, 2 - k), `re-run after ${k} steps expires the rest`)
            assert.deepStrictEqual(yield* finalState(s), expected, `state after a kill at step ${k} and a re-run`)
          }
        }).pipe(asFreshTenant),
      )
    })
  })

suite("sqlite", () => Backend.sqlite(), true)
suite("postgres", () => Backend.postgres(inject("pgUrl")), false)

// internal

const first = (s: Seeded) => {
  const digest = s.blobs[0]
  if (digest === undefined) throw new Error("the seed made no blob")
  return digest
}
