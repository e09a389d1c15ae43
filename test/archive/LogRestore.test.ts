/**
 * Restore keeps the transparency log (§6.5, §9.3): an export with a checkpoint is restored with
 * every logged run at the position it had (runs sealed before writing anything too), then the runs
 * sealed after the checkpoint; integrated with the same key, the restored log has the source's
 * root at the checkpoint's size. A restore that dies between its seals is finished by running it
 * again, and the log comes out the same.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, Option, Stream } from "effect"
import { inject } from "vitest"
import * as Restore from "../../src/archive/Restore.js"
import * as MerkleProof from "../../src/domain/MerkleProof.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { deploymentKey, NOW, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed } from "./Support.js"

/** The tenant's log as plain rows: position, run, records, head, outcome. */
const logRows = Effect.flatMap(LogStore, (log) => log.leaves(0, 1_000)).pipe(
  Effect.map((page) => page.map((p) => [p.index, p.leaf.run, p.leaf.records, p.leaf.chainHead, p.leaf.outcome])),
)

/** `runsByOutcome` of the outcomes sealed runs have here. */
const byOutcome = Effect.flatMap(JournalStore, (journal) =>
  Effect.forEach(["succeeded", "swept"] as const, (o) => journal.runsByOutcome(o, 1_000)),
)

/**
 * A source tenant: the archive seed and five sealed runs (two sealed before writing anything),
 * integrated, then two more sealed with records after the checkpoint. Its export, key and log.
 */
const source = Effect.gen(function* () {
  const journal = yield* JournalStore
  const log = yield* LogStore
  yield* seed(3)
  for (let i = 1; i <= 6; i++) yield* sealed(journal, i)
  const { key } = deploymentKey()
  yield* log.integrate(key, NOW, 1_000)
  const checkpoint = Option.getOrThrow(yield* log.checkpoint())
  // Each concluded by a record, so the export shows them sealed (`Sealed`).
  yield* sealed(journal, 2)
  yield* sealed(journal, 5)
  return { key, checkpoint, lines: yield* exportLines, rows: yield* logRows, byOutcome: yield* byOutcome }
})

/** `JournalStore` whose seal-only imports die after `n` have committed: a restore killed between its seals. */
const dyingAfter = (n: number) =>
  Effect.map(JournalStore, (real) => {
    let seals = 0
    return JournalStore.of({
      ...real,
      importRecords: (records, toSeal) => {
        if (records.length > 0) return real.importRecords(records, toSeal)
        seals += 1
        return seals > n ? Effect.die("killed between seals") : real.importRecords(records, toSeal)
      },
    })
  })

const backends = [Backend.memory(), Backend.sqlite(), Backend.postgres(inject("pgUrl"))]

for (const backend of backends) {
  describe(`restore and the log: ${backend.name}`, () => {
    Backend.battery(backend, (test) => {
      test("a restored tenant's log holds every run at its old position, and has the old root", () =>
        Effect.gen(function* () {
          const from = yield* source.pipe(as(Backend.freshTenant()))
          const target = Backend.freshTenant()
          const restored = yield* Restore.restore(() => Stream.fromIterable(from.lines), { batch: 4 }).pipe(as(target))
          // Eight leaves (two with no records) and the two runs sealed since.
          assert.strictEqual(restored.sealed, 10)
          const rows = yield* logRows.pipe(as(target))
          assert.deepStrictEqual(rows.slice(0, from.checkpoint.size), from.rows.slice(0, from.checkpoint.size))
          // Sealed after the checkpoint: the same runs after it, in export (run id) order.
          assert.deepStrictEqual(
            rows.slice(from.checkpoint.size).map((r) => r[1]),
            from.rows
              .slice(from.checkpoint.size)
              .map((r) => r[1])
              .sort(),
          )
          // Sealed in the source's order, the runs are listed by outcome in it too.
          assert.deepStrictEqual(yield* byOutcome.pipe(as(target)), from.byOutcome)
          const log = yield* LogStore
          yield* log.integrate(from.key, NOW, from.checkpoint.size).pipe(as(target))
          yield* log.integrate(from.key, NOW, 1_000).pipe(as(target))
          const at = Option.getOrThrow(yield* log.checkpointAt(from.checkpoint.size).pipe(as(target)))
          assert.strictEqual(at.root, from.checkpoint.root)
          const latest = Option.getOrThrow(yield* log.checkpoint().pipe(as(target)))
          const proof = yield* log.consistencyProof(from.checkpoint.size, latest.size).pipe(as(target))
          assert.isTrue(
            Either.isRight(
              MerkleProof.verifyConsistency(
                from.checkpoint.size,
                latest.size,
                proof,
                from.checkpoint.root,
                latest.root,
              ),
            ),
          )
        }))

      test("a restore killed between its seals is finished by running it again, to the same log", () =>
        Effect.gen(function* () {
          const from = yield* source.pipe(as(Backend.freshTenant()))
          const whole = Backend.freshTenant()
          yield* Restore.restore(() => Stream.fromIterable(from.lines), { batch: 3 }).pipe(as(whole))
          for (const n of [0, 1, 3]) {
            const target = Backend.freshTenant()
            const killed = yield* Effect.exit(
              Restore.restore(() => Stream.fromIterable(from.lines), { batch: 3 }).pipe(
                Effect.provideServiceEffect(JournalStore, dyingAfter(n)),
                as(target),
              ),
            )
            assert.isTrue(killed._tag === "Failure", `killed after ${n}`)
            assert.strictEqual((yield* logRows.pipe(as(target))).length, 3 * n)
            const again = yield* Restore.restore(() => Stream.fromIterable(from.lines), { batch: 3 }).pipe(as(target))
            assert.strictEqual(again.sealed, 10 - 3 * n, `killed after ${n}`)
            assert.deepStrictEqual(yield* logRows.pipe(as(target)), yield* logRows.pipe(as(whole)))
            const rerun = yield* Restore.restore(() => Stream.fromIterable(from.lines)).pipe(as(target))
            assert.strictEqual(rerun.sealed, 0)
          }
        }))
    })
  })
}
