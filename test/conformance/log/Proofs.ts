/**
 * §6.5 `inclusionProof`, `consistencyProof`: what each refuses, and that a refusal changes nothing.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import {
  RunNotIntegrated,
  RunNotLogged,
  RunOutsideSize,
  SizeBeyondLog,
  SizesUnordered,
} from "../../../src/errors/LogError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, freshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import type { Tester } from "../journal/Fixtures.js"
import { assertConsistent, assertIncluded, deploymentKey, NOW, sealed } from "./Fixtures.js"

export const proofs = (test: Tester) => {
  describe("inclusionProof / consistencyProof", () => {
    test("a proof at any size up to the latest, not only at a checkpoint's", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const log = yield* LogStore
          const { key } = deploymentKey()
          const runs = []
          for (let i = 0; i < 7; i++) runs.push(yield* sealed(store, i))
          yield* log.integrate(key, NOW, 7)
          const latest = Option.getOrThrow(yield* log.checkpoint())
          const first = runs[0]
          if (first === undefined) return assert.fail("no run")
          // Size 1: the tree is the leaf itself, and the path is empty.
          const alone = yield* log.inclusionProof(first.run, 1)
          assert.deepStrictEqual(alone.proof, [])
          assert.deepStrictEqual(yield* log.consistencyProof(7, 7), [])
          yield* assertConsistent(latest, latest)
          for (const [position, s] of runs.entries()) yield* assertIncluded(s, position, latest)
        }),
      ))

    test("refusals name the condition, in order: unknown run, not integrated, size past the latest, size not holding the run", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const log = yield* LogStore
          const { key } = deploymentKey()
          const a = yield* sealed(store, 1)
          const b = yield* sealed(store, 2)
          yield* log.integrate(key, NOW, 10)
          const late = yield* sealed(store, 0)
          const stranger = generateRunId()
          assertError(yield* Effect.flip(log.inclusionProof(stranger, 1)), new RunNotLogged({ run: stranger }))
          assertError(
            yield* Effect.flip(log.inclusionProof(late.run, 2)),
            new RunNotIntegrated({ run: late.run, position: 2, size: 2 }),
          )
          assertError(yield* Effect.flip(log.inclusionProof(a.run, 3)), new SizeBeyondLog({ size: 3, latest: 2 }))
          assertError(yield* Effect.flip(log.inclusionProof(a.run, -1)), new SizeBeyondLog({ size: -1, latest: 2 }))
          assertError(yield* Effect.flip(log.inclusionProof(a.run, 1.5)), new SizeBeyondLog({ size: 1.5, latest: 2 }))
          assertError(
            yield* Effect.flip(log.inclusionProof(b.run, 1)),
            new RunOutsideSize({ run: b.run, position: 1, size: 1 }),
          )
          // Every tree extends the empty one: from 0 the proof is empty (`MerkleProof.verifyExtends`).
          assert.deepStrictEqual(yield* log.consistencyProof(0, 2), [])
          assertError(yield* Effect.flip(log.consistencyProof(0, 3)), new SizeBeyondLog({ size: 3, latest: 2 }))
          assertError(yield* Effect.flip(log.consistencyProof(-1, 2)), new SizesUnordered({ from: -1, to: 2 }))
          assertError(yield* Effect.flip(log.consistencyProof(2, 1)), new SizesUnordered({ from: 2, to: 1 }))
          assertError(yield* Effect.flip(log.consistencyProof(1, 3)), new SizeBeyondLog({ size: 3, latest: 2 }))
          // None of it moved the log.
          assert.strictEqual(Option.getOrThrow(yield* log.checkpoint()).size, 2)
          assert.deepStrictEqual(yield* log.integrate(key, NOW, 10), { leaves: 1, size: 3 })
        }),
      ))

    test("one tenant's runs have no proof in another's log", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const log = yield* LogStore
        const { key } = deploymentKey()
        const [a, b] = [freshTenant(), freshTenant()]
        const s = yield* sealed(store, 1).pipe(Effect.provideService(Tenant, a))
        yield* log.integrate(key, NOW, 10).pipe(Effect.provideService(Tenant, a))
        yield* sealed(store, 1).pipe(Effect.provideService(Tenant, b))
        yield* log.integrate(key, NOW, 10).pipe(Effect.provideService(Tenant, b))
        assertError(
          yield* Effect.flip(log.inclusionProof(s.run, 1).pipe(Effect.provideService(Tenant, b))),
          new RunNotLogged({ run: s.run }),
        )
      }))
  })
}
