/**
 * Erasure keeps the transparency log verifiable (§6.5, §9.1): leaves commit to chain heads over
 * ciphertext, so after `eraseCase` the erased case's run still proves its inclusion in the
 * checkpoint signed before, `verify(run)` (the chain recomputed, its leaf proved) still holds,
 * and an export taken after the erasure verifies against that kept checkpoint.
 */
import { randomUUID } from "node:crypto"
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Option, Stream } from "effect"
import { inject } from "vitest"
import * as Verify from "../../src/archive/Verify.js"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import * as LogAudit from "../../src/domain/LogAudit.js"
import { eraseCase } from "../../src/erasure/EraseCase.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { exportLines } from "../archive/Support.js"
import { concluded } from "../conformance/journal/Fixtures.js"
import { deploymentKey, NOW } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { at, type Seeded, seed, world } from "./World.js"

/** A seeded case's run, sealed `succeeded` by the lease it still holds. */
const sealedCase = (secret: string) =>
  Effect.gen(function* () {
    const s: Seeded = yield* seed(secret)
    yield* (yield* JournalStore).seal(s.run, s.epoch, "succeeded", [concluded("succeeded")])
    return s
  })

const suite = (name: string, backend: () => Backend.Backend) =>
  describe(`erasure and the log (${name})`, () => {
    layer(world(backend()), { excludeTestServices: true })((it) => {
      it.effect(
        "an erased case's run still proves its inclusion, verifies, and exports against the kept checkpoint",
        () =>
          Effect.gen(function* () {
            const journal = yield* JournalStore
            const log = yield* LogStore
            const a = yield* sealedCase(`A-secret-${randomUUID()}`)
            const b = yield* sealedCase(`B-secret-${randomUUID()}`)
            const { key, verifier } = deploymentKey()
            yield* log.integrate(key, NOW, 100)
            const stored = Option.getOrThrow(yield* log.checkpoint())
            const kept = Either.getOrThrow(Checkpoint.open(stored.note, [verifier]))
            const headA = yield* journal.verify(a.run)
            const before = yield* log.inclusionProof(a.run, kept.size)

            assert.strictEqual(yield* eraseCase(a.kase, at(100), "customer request"), 1)

            // The same leaf at the same position, and its proof against the root signed before.
            const after = yield* log.inclusionProof(a.run, kept.size)
            assert.deepStrictEqual(after, before)
            for (const run of [a.run, b.run]) {
              const included = yield* log.inclusionProof(run, kept.size)
              const head = yield* journal.verify(run)
              assert.isTrue(Either.isRight(LogAudit.checkRun(head, included, kept.root)), `verify(${run})`)
            }
            assert.deepStrictEqual(yield* journal.verify(a.run), headA)
            // An export after the erasure: the ciphertext is what the leaves committed to.
            const verified = yield* Verify.lines(Stream.fromIterable(yield* exportLines), undefined, { verifier, kept })
            assert.deepStrictEqual(
              Option.map(verified.log, (l) => [l.size, l.signature, l.kept]),
              Option.some([kept.size, "verified", Option.some({ size: kept.size, root: kept.root, added: 0 })]),
            )
          }).pipe(Backend.asFreshTenant),
      )
    })
  })

suite("sqlite", () => Backend.sqlite())
suite("postgres", () => Backend.postgres(inject("pgUrl")))
