/**
 * The KeyRing contract (§9.1) on the memory layer and the table on both dialects: one key per
 * scope, `open` of what `dataKey` made, `destroy` idempotent with the first instant standing, and
 * after it `Destroyed` from both, never a fresh key.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { inject } from "vitest"
import { Tenant } from "../../src/domain/Tenant.js"
import * as Kek from "../../src/erasure/Kek.js"
import { Destroyed, KekMismatch, KeyUnknown } from "../../src/errors/ErasureError.js"
import * as KeyRingSql from "../../src/layers/KeyRingSql.js"
import * as KeyRingMemory from "../../src/layers/memory/KeyRingMemory.js"
import { KeyRing } from "../../src/services/KeyRing.js"
import { at } from "../conformance/blob/Fixture.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { asFreshTenant, freshTenant } from "../support/Backend.js"
import { assertError } from "../support/Errors.js"

const kek = Kek.make(randomBytes(32))

const scope = () => `case-${Math.random().toString(36).slice(2)}`

describe.each([
  { name: "memory", ring: () => KeyRingMemory.layer(kek), sql: false },
  { name: "sqlite", ring: () => sqlRing(Backend.sqlite()), sql: true },
  { name: "postgres", ring: () => sqlRing(Backend.postgres(inject("pgUrl"))), sql: true },
])("KeyRing ($name)", ({ ring, sql }) => {
  layer(ring() as Layer.Layer<KeyRing>, { excludeTestServices: true })((it) => {
    it.effect("dataKey makes a 32-byte key once and returns the same key after", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const s = scope()
        const first = yield* keys.dataKey(s)
        assert.strictEqual(first.key.length, 32)
        assert.strictEqual(first.scope, s)
        assert.deepStrictEqual(Buffer.from((yield* keys.dataKey(s)).key), Buffer.from(first.key))
        assert.deepStrictEqual(Buffer.from((yield* keys.open(s)).key), Buffer.from(first.key))
      }).pipe(asFreshTenant),
    )

    it.effect("two scopes have two keys", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const [a, b] = [yield* keys.dataKey(scope()), yield* keys.dataKey(scope())]
        assert.notStrictEqual(Buffer.from(a.key).toString("hex"), Buffer.from(b.key).toString("hex"))
      }).pipe(asFreshTenant),
    )

    it.effect("open of a scope never used is KeyUnknown, naming tenant and scope", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const tenant = yield* Tenant
        const s = scope()
        assertError(yield* Effect.flip(keys.open(s)), new KeyUnknown({ scope: `${tenant}/${s}` }))
      }).pipe(asFreshTenant),
    )

    it.effect("after destroy, dataKey and open fail Destroyed; a repeat keeps the first instant and reason", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const tenant = yield* Tenant
        const s = scope()
        yield* keys.dataKey(s)
        yield* keys.destroy(s, at(10), "customer asked")
        yield* keys.destroy(s, at(20), "again")
        const expected = new Destroyed({ scope: `${tenant}/${s}`, at: at(10), reason: "customer asked" })
        assertError(yield* Effect.flip(keys.open(s)), expected)
        assertError(yield* Effect.flip(keys.dataKey(s)), expected)
      }).pipe(asFreshTenant),
    )

    it.effect("destroying a scope never used still refuses it a key later", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const s = scope()
        yield* keys.destroy(s, at(1), "erased before first use")
        assert.strictEqual((yield* Effect.flip(keys.dataKey(s)))._tag, "Destroyed")
      }).pipe(asFreshTenant),
    )

    it.effect(
      "tenants are apart: the same scope name is another key, and one tenant's destroy leaves the other's",
      () =>
        Effect.gen(function* () {
          const keys = yield* KeyRing
          const [a, b] = [freshTenant(), freshTenant()]
          const s = scope()
          const ka = yield* keys.dataKey(s).pipe(Effect.provideService(Tenant, a))
          const kb = yield* keys.dataKey(s).pipe(Effect.provideService(Tenant, b))
          assert.notStrictEqual(Buffer.from(ka.key).toString("hex"), Buffer.from(kb.key).toString("hex"))
          yield* keys.destroy(s, at(1), "a only").pipe(Effect.provideService(Tenant, a))
          const still = yield* keys.open(s).pipe(Effect.provideService(Tenant, b))
          assert.deepStrictEqual(Buffer.from(still.key), Buffer.from(kb.key))
        }),
    )

    it.effect("concurrent first uses of a scope all get one key", () =>
      Effect.gen(function* () {
        const keys = yield* KeyRing
        const s = scope()
        const all = yield* Effect.all(
          Array.from({ length: 8 }, () => keys.dataKey(s)),
          { concurrency: "unbounded" },
        )
        assert.strictEqual(new Set(all.map((k) => Buffer.from(k.key).toString("hex"))).size, 1)
      }).pipe(asFreshTenant),
    )

    if (sql) {
      it.effect(
        "the table holds the key only wrapped, and a wrong KEK is named, not taken for damage",
        () =>
          Effect.gen(function* () {
            const keys = yield* KeyRing
            const client = yield* SqlClient.SqlClient
            const tenant = yield* Tenant
            const s = scope()
            const made = yield* keys.dataKey(s)
            const rows = yield* client<{
              wrapped: Uint8Array
            }>`SELECT wrapped FROM key_ring WHERE tenant = ${tenant} AND scope = ${s}`
            const wrapped = Buffer.from(rows[0]?.wrapped ?? new Uint8Array(0))
            assert.isTrue(wrapped.length > 32)
            assert.strictEqual(wrapped.indexOf(Buffer.from(made.key)), -1)
            const other = Kek.make(randomBytes(32))
            const wrong = yield* KeyRingSql.make(other)
            assertError(
              yield* Effect.flip(wrong.open(s)),
              new KekMismatch({ scope: `${tenant}/${s}`, stored: kek.id, supplied: other.id }),
            )
          }).pipe(asFreshTenant) as Effect.Effect<void, unknown, KeyRing>,
      )
    }
  })
})

describe("Kek", () => {
  layer(Layer.empty)((it) => {
    it.effect("a KEK must be 32 bytes of base64; anything else says what to give", () =>
      Effect.sync(() => {
        const ok = Kek.fromBase64(`${randomBytes(32).toString("base64")}\n`, "AGENTPLANE_KEK")
        assert.strictEqual(ok._tag, "Right")
        const short = Kek.fromBase64(randomBytes(16).toString("base64"), "AGENTPLANE_KEK")
        assert.strictEqual(short._tag, "Left")
        if (short._tag === "Left") assert.match(short.left.message, /16 bytes; give exactly 32/)
        const junk = Kek.fromBase64("not base64!", "the KEK file k")
        if (junk._tag === "Left") assert.match(junk.left.message, /the KEK file k is not base64/)
        else assert.fail("junk was taken as a KEK")
      }),
    )
  })
})

// internal

const sqlRing = (backend: Backend.Backend) =>
  Option.match(backend.sql, {
    onNone: () => Layer.die("no SQL"),
    onSome: (sql) => Layer.provideMerge(KeyRingSql.layer(kek), sql.layer),
  })
