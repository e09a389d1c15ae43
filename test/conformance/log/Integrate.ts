/**
 * §6.5 `integrate`, `checkpoint`, `checkpointAt`: sealed leaves hashed into the tenant's tree in
 * position order, a signed checkpoint per integration.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import * as Checkpoint from "../../../src/domain/Checkpoint.js"
import * as LogLeaf from "../../../src/domain/LogLeaf.js"
import * as Merkle from "../../../src/domain/Merkle.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { Timestamp } from "../../../src/domain/Time.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, freshTenant } from "../../support/Backend.js"
import type { Tester } from "../journal/Fixtures.js"
import { assertConsistent, assertIncluded, deploymentKey, NOW, opened, sealed } from "./Fixtures.js"

export const integrate = (test: Tester) => {
  describe("integrate", () => {
    test("an empty log has no checkpoint until an integration call signs the empty tree at size 0, once", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const log = yield* LogStore
          const { key, verifier } = deploymentKey()
          assert.deepStrictEqual(yield* log.checkpoint(), Option.none())
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: 0, size: 0 })
          const cp = Option.getOrThrow(yield* log.checkpoint())
          // RFC 9162: the empty tree's root is SHA-256 of the empty string.
          assert.deepStrictEqual([cp.size, cp.root, cp.signedAt], [0, Merkle.EMPTY_ROOT, NOW])
          yield* opened(cp, verifier)
          assert.deepStrictEqual(Option.getOrThrow(yield* log.checkpointAt(0)), cp)
          // A later empty call keeps the first note rather than signing again.
          assert.deepStrictEqual(yield* log.integrate(key, Timestamp.make(NOW + 1), 100), { leaves: 0, size: 0 })
          assert.deepStrictEqual(Option.getOrThrow(yield* log.checkpoint()), cp)
          const store = yield* JournalStore
          yield* sealed(store, 0)
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: 1, size: 1 })
          assert.strictEqual(Option.getOrThrow(yield* log.checkpoint()).size, 1)
          assert.deepStrictEqual(Option.getOrThrow(yield* log.checkpointAt(0)), cp)
        }),
      ))

    test("integrates every sealed run in seal order, from position 0, each tenant its own log", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const log = yield* LogStore
        const { key, verifier } = deploymentKey()
        const [a, b] = [freshTenant(), freshTenant()]
        const inA = []
        const inB = []
        for (let i = 0; i < 6; i++) {
          inA.push(yield* sealed(store, i).pipe(Effect.provideService(Tenant, a)))
          if (i % 2 === 1) inB.push(yield* sealed(store, i).pipe(Effect.provideService(Tenant, b)))
        }
        for (const [tenant, runs] of [
          [a, inA],
          [b, inB],
        ] as const)
          yield* Effect.gen(function* () {
            assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: runs.length, size: runs.length })
            const cp = Option.getOrThrow(yield* log.checkpoint())
            // The root is RFC 9162's over the leaves in seal order: positions are dense from 0.
            const root = Merkle.root(
              runs.map((s) =>
                LogLeaf.hash(
                  new LogLeaf.LogLeaf({ run: s.run, chainHead: s.head, records: s.records, outcome: s.outcome }),
                ),
              ),
            )
            assert.strictEqual(cp.root, root)
            assert.strictEqual(cp.signedAt, NOW)
            yield* opened(cp, verifier)
            for (const [position, s] of runs.entries()) yield* assertIncluded(s, position, cp)
            // Nothing new: nothing integrated, the checkpoint stays.
            assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: 0, size: runs.length })
            assert.deepStrictEqual(yield* log.checkpoint(), Option.some(cp))
          }).pipe(Effect.provideService(Tenant, tenant))
      }))

    test("leaves pages the sealed leaves by position, integrated or not, and only the tenant's own", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const log = yield* LogStore
        const [a, b] = [freshTenant(), freshTenant()]
        const runs = []
        for (let i = 0; i < 5; i++) {
          runs.push(yield* sealed(store, i).pipe(Effect.provideService(Tenant, a)))
          yield* sealed(store, i).pipe(Effect.provideService(Tenant, b))
        }
        yield* log.integrate(deploymentKey().key, NOW, 2).pipe(Effect.provideService(Tenant, a))
        const expected = runs.map((s, index) => ({
          index,
          leaf: { run: s.run, chainHead: s.head, records: s.records, outcome: s.outcome },
        }))
        const plain = (page: ReadonlyArray<{ index: number; leaf: LogLeaf.LogLeaf }>) =>
          page.map((p) => ({
            index: p.index,
            leaf: { run: p.leaf.run, chainHead: p.leaf.chainHead, records: p.leaf.records, outcome: p.leaf.outcome },
          }))
        yield* Effect.gen(function* () {
          assert.deepStrictEqual(plain(yield* log.leaves(0, 100)), expected)
          assert.deepStrictEqual(plain(yield* log.leaves(1, 3)), expected.slice(1, 4))
          assert.deepStrictEqual(plain(yield* log.leaves(4, 3)), expected.slice(4))
          assert.deepStrictEqual(yield* log.leaves(5, 3), [])
          assert.deepStrictEqual(yield* log.leaves(0, 0), [])
          assert.deepStrictEqual(yield* log.leaves(-1, 3), [])
        }).pipe(Effect.provideService(Tenant, a))
      }))

    test("max bounds a batch; each integration keeps its checkpoint, and each is consistent with the earlier", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const log = yield* LogStore
          const { key, verifier } = deploymentKey()
          const runs = []
          for (let i = 0; i < 5; i++) runs.push(yield* sealed(store, i))
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 0), { leaves: 0, size: 0 })
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 2), { leaves: 2, size: 2 })
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 2), { leaves: 2, size: 4 })
          runs.push(yield* sealed(store, 5))
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 2.7), { leaves: 2, size: 6 })
          const checkpoints = []
          for (const size of [2, 4, 6]) {
            const cp = Option.getOrThrow(yield* log.checkpointAt(size))
            yield* opened(cp, verifier)
            checkpoints.push(cp)
          }
          assert.deepStrictEqual(yield* log.checkpointAt(3), Option.none())
          assert.deepStrictEqual(yield* log.checkpointAt(7), Option.none())
          assert.deepStrictEqual(yield* log.checkpoint(), Option.some(checkpoints[2]))
          for (const [i, older] of checkpoints.entries())
            for (const newer of checkpoints.slice(i)) yield* assertConsistent(older, newer)
          for (const cp of checkpoints)
            for (const [position, s] of runs.entries()) if (position < cp.size) yield* assertIncluded(s, position, cp)
        }),
      ))

    test("a key whose origin cannot be a checkpoint line fails and stores nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const log = yield* LogStore
          const { key } = deploymentKey()
          yield* sealed(store, 1)
          const bad = { ...key, deployment: "two\nlines" }
          const e = yield* Effect.flip(log.integrate(bad, NOW, 10))
          assert.strictEqual(e._tag, "CheckpointMalformed")
          assert.deepStrictEqual(yield* log.checkpoint(), Option.none())
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 10), { leaves: 1, size: 1 })
          // The note's text is the C2SP checkpoint of that size.
          const cp = Option.getOrThrow(yield* log.checkpoint())
          const body = Either.getOrThrow(Checkpoint.parse(cp.note.slice(0, cp.note.indexOf("\n\n") + 1)))
          assert.strictEqual(body.size, 1)
        }),
      ))
  })
}
