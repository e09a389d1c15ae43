/**
 * `LogStore.signEmpty` (§6.5): a log with no checkpoint gets the empty tree's, signed once, so an
 * auditor can keep one before anything is sealed; racing callers (on pg through a pool of their
 * own, each on its connection) all get the one stored; a later integration is consistent with it.
 */

import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import * as Merkle from "../../../src/domain/Merkle.js"
import * as MerkleProof from "../../../src/domain/MerkleProof.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { Timestamp } from "../../../src/domain/Time.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend, type SqlTester } from "../../support/Backend.js"
import { fire, runs, shape } from "../../support/Races.js"
import type { Tester } from "../journal/Fixtures.js"
import { deploymentKey, NOW, opened, sealed } from "./Fixtures.js"

const Count = Schema.Array(Schema.Struct({ n: Schema.Union(Schema.Number, Schema.NumberFromString) }))

/** The rows `log_checkpoint` holds for the fiber's tenant, read behind the store's back. */
const storedRows = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tenant = yield* Tenant
  const [row] = yield* sql`SELECT COUNT(*) AS n FROM log_checkpoint WHERE tenant = ${tenant}`.pipe(
    Effect.flatMap(Schema.decodeUnknown(Count)),
  )
  return row?.n ?? 0
})

/** `sql`: on a database, the race also counts the stored rows. */
export const signEmpty = (test: Tester, sql: Option.Option<SqlTester>, backend: Backend) => {
  describe("signEmpty", () => {
    test("a log with no checkpoint gets the empty tree's at size 0, once; a later integration extends it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const log = yield* LogStore
          const { key, verifier } = deploymentKey()
          assert.deepStrictEqual(yield* log.checkpoint(), Option.none())
          const empty = yield* log.signEmpty(key, NOW)
          assert.deepStrictEqual([empty.size, empty.root, empty.signedAt], [0, Merkle.EMPTY_ROOT, NOW])
          yield* opened(empty, verifier)
          assert.deepStrictEqual(yield* log.checkpoint(), Option.some(empty))
          assert.deepStrictEqual(yield* log.checkpointAt(0), Option.some(empty))
          // Another key and a later time sign nothing: the stored note stays, and an integration
          // with nothing to hash keeps it too.
          const other = deploymentKey()
          assert.deepStrictEqual(yield* log.signEmpty(other.key, Timestamp.make(NOW + 5)), empty)
          assert.deepStrictEqual(yield* log.integrate(other.key, Timestamp.make(NOW + 6), 10), { leaves: 0, size: 0 })
          assert.deepStrictEqual(yield* log.checkpoint(), Option.some(empty))

          const journal = yield* JournalStore
          for (let i = 0; i < 3; i++) yield* sealed(journal, i)
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 10), { leaves: 3, size: 3 })
          const three = Option.getOrThrow(yield* log.checkpoint())
          // Past size 0 it answers the latest and signs nothing.
          assert.deepStrictEqual(yield* log.signEmpty(key, Timestamp.make(NOW + 7)), three)
          assert.deepStrictEqual(yield* log.checkpointAt(0), Option.some(empty))
          // The kept empty checkpoint is a prefix of the later one: the log's proof from 0 is empty.
          const proof = yield* log.consistencyProof(0, 3)
          assert.deepStrictEqual(proof, [])
          const extended = MerkleProof.verifyExtends(0, 3, proof, empty.root, three.root)
          assert.isTrue(extended._tag === "Right", String(extended))
        }),
      ))

    test("a log integrated from leaves first has no size-0 checkpoint, and signEmpty adds none", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const log = yield* LogStore
          const { key } = deploymentKey()
          yield* sealed(yield* JournalStore, 0)
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 10), { leaves: 1, size: 1 })
          const one = Option.getOrThrow(yield* log.checkpoint())
          assert.deepStrictEqual(yield* log.signEmpty(key, NOW), one)
          assert.deepStrictEqual(yield* log.checkpointAt(0), Option.none())
        }),
      ))

    const race = (fibers: number, pool: number) =>
      Effect.scoped(
        Effect.gen(function* () {
          const other = Context.get(yield* Layer.build(backend.pooled(pool)), LogStore)
          const mine = yield* LogStore
          const keys = Array.from({ length: fibers }, () => deploymentKey())
          const keyOf = (i: number) => keys[i] as (typeof keys)[number]
          const got = yield* fire(fibers, (i) =>
            (i % 2 === 0 ? mine : other).signEmpty(keyOf(i).key, Timestamp.make(NOW + i)),
          )
          const first = got[0]
          if (first === undefined) return assert.fail("no answer")
          for (const cp of got) assert.deepStrictEqual(cp, first)
          // The one stored is one caller's: its key signed the note, at its time.
          const signer = keys[first.signedAt - NOW]
          if (signer === undefined) return assert.fail(`signed at ${first.signedAt}, no caller's time`)
          yield* opened(first, signer.verifier)
          assert.deepStrictEqual(yield* mine.checkpoint(), Option.some(first))
          assert.deepStrictEqual(yield* other.checkpointAt(0), Option.some(first))
        }),
      )
    const name = "racing callers, each with its own key and time, store one empty checkpoint and all get it"
    const options = { timeout: 120_000, fastCheck: { ...runs.fastCheck } }
    Option.match(sql, {
      onNone: () =>
        test.prop(
          name,
          [shape.fibers, shape.pool],
          ([fibers, pool]) => race(fibers, pool).pipe(asFreshTenant),
          options,
        ),
      onSome: (sqlTest) =>
        sqlTest.prop(
          name,
          [shape.fibers, shape.pool],
          ([fibers, pool]) =>
            Effect.gen(function* () {
              yield* race(fibers, pool)
              assert.strictEqual(yield* storedRows, 1)
            }).pipe(asFreshTenant),
          options,
        ),
    })
  })
}
