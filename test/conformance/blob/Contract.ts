/**
 * Every sentence of the BlobStore contract (§9.1): content addressing, the digest checked on
 * `get`, tombstones, the first expiry standing, and tenants kept apart.
 */
import { describe } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import * as Digest from "../../../src/domain/Digest.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { BlobExpired } from "../../../src/errors/ErasureError.js"
import { BlobStore } from "../../../src/services/BlobStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, freshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, type BlobFixture, bytes, type Tester } from "./Fixture.js"

export const contract = <R>(test: Tester<R>, fixture: BlobFixture<R>) => {
  describe("put and get", () => {
    test("put returns the SHA-256 of the bytes and get returns them", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const content = bytes(`invoice ${Math.random()}`)
        const digest = yield* store.put(content)
        assert.strictEqual(digest, Digest.of(content))
        assert.deepStrictEqual(yield* store.get(digest), Option.some(Uint8Array.from(content)))
        assert.isTrue(yield* store.has(digest))
      }).pipe(asFreshTenant))

    test("identical bytes are one blob: a second put changes nothing", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const content = bytes("the same letter twice")
        const first = yield* store.put(content)
        assert.strictEqual(yield* store.put(Uint8Array.from(content)), first)
        assert.deepStrictEqual(yield* store.get(first), Option.some(Uint8Array.from(content)))
      }).pipe(asFreshTenant))

    test("empty bytes are a blob too", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const digest = yield* store.put(new Uint8Array(0))
        assert.deepStrictEqual(yield* store.get(digest), Option.some(new Uint8Array(0)))
      }).pipe(asFreshTenant))

    test("a digest never stored reads none and is not had", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const digest = Digest.of(`never stored ${Math.random()}`)
        assert.deepStrictEqual(yield* store.get(digest), Option.none())
        assert.isFalse(yield* store.has(digest))
        assert.deepStrictEqual(yield* store.tombstone(digest), Option.none())
      }).pipe(asFreshTenant))

    if (Option.isSome(fixture.tamper)) {
      const tamper = fixture.tamper.value
      test("get checks the digest: changed bytes are Corrupt, not content", () =>
        Effect.gen(function* () {
          const store = yield* BlobStore
          const digest = yield* store.put(bytes("a signed contract"))
          yield* tamper(digest, bytes("a forged contract"))
          const exit = yield* Effect.exit(store.get(digest))
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
            assert.strictEqual(error?._tag, "Corrupt")
            assert.match(String(error?.message), /do not match their digest/)
          }
        }).pipe(asFreshTenant))
    }
  })

  describe("expire", () => {
    test("expire deletes the bytes and leaves a tombstone; get then fails BlobExpired", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const digest = yield* store.put(bytes("a medical report"))
        assert.isTrue(yield* store.expire(digest, at(5), "case erased"))
        assert.isFalse(yield* store.has(digest))
        assert.deepStrictEqual(yield* store.tombstone(digest), Option.some({ at: at(5), reason: "case erased" }))
        assertError(
          yield* Effect.flip(store.get(digest)),
          new BlobExpired({ digest, at: at(5), reason: "case erased" }),
        )
      }).pipe(asFreshTenant))

    test("the first expiry stands: a second one returns false and changes nothing", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const digest = yield* store.put(bytes("a photo"))
        assert.isTrue(yield* store.expire(digest, at(5), "first"))
        assert.isFalse(yield* store.expire(digest, at(9), "second"))
        assert.deepStrictEqual(yield* store.tombstone(digest), Option.some({ at: at(5), reason: "first" }))
      }).pipe(asFreshTenant))

    test("a put of expired bytes is refused and stores nothing", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const content = bytes("erased and offered again")
        const digest = yield* store.put(content)
        yield* store.expire(digest, at(1), "erased")
        assertError(yield* Effect.flip(store.put(content)), new BlobExpired({ digest, at: at(1), reason: "erased" }))
        assert.isFalse(yield* store.has(digest))
      }).pipe(asFreshTenant))

    test("expiring a digest never stored still lays a tombstone, so its bytes can never arrive", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const content = bytes(`not yet written ${Math.random()}`)
        const digest = Digest.of(content)
        assert.isTrue(yield* store.expire(digest, at(2), "erased first"))
        assert.deepStrictEqual(yield* store.tombstone(digest), Option.some({ at: at(2), reason: "erased first" }))
        assert.strictEqual((yield* Effect.flip(store.put(content)))._tag, "BlobExpired")
      }).pipe(asFreshTenant))

    test("concurrent expiries of one blob: exactly one lays the tombstone", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const digest = yield* store.put(bytes(`raced ${Math.random()}`))
        const laid = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => store.expire(digest, at(i), `fiber ${i}`)),
          { concurrency: "unbounded" },
        )
        assert.strictEqual(laid.filter(Boolean).length, 1)
        const winner = laid.indexOf(true)
        assert.deepStrictEqual(
          yield* store.tombstone(digest),
          Option.some({ at: at(winner), reason: `fiber ${winner}` }),
        )
      }).pipe(asFreshTenant))
  })

  describe("tenancy", () => {
    test("one tenant's expiry leaves another tenant's identical bytes alone", () =>
      Effect.gen(function* () {
        const store = yield* BlobStore
        const [a, b] = [freshTenant(), freshTenant()]
        const content = bytes("shared wording")
        const digest = yield* store.put(content).pipe(Effect.provideService(Tenant, a))
        yield* store.put(content).pipe(Effect.provideService(Tenant, b))
        yield* store.expire(digest, at(3), "erased in a").pipe(Effect.provideService(Tenant, a))
        assert.deepStrictEqual(
          yield* store.get(digest).pipe(Effect.provideService(Tenant, b)),
          Option.some(Uint8Array.from(content)),
        )
        assert.deepStrictEqual(
          yield* store.get(digest).pipe(Effect.provideService(Tenant, freshTenant())),
          Option.none(),
        )
      }))
  })
}
