/**
 * Export → verify → restore into a fresh tenant → export again, on each backend: the two exports
 * are byte-identical but for the header's tenant, and every read path answers the same.
 */
import { describe, it, layer } from "@effect/vitest"
import { Effect, Either, Stream } from "effect"
import { inject } from "vitest"
import * as Restore from "../../src/archive/Restore.js"
import * as Verify from "../../src/archive/Verify.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Fx from "../conformance/journal/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed, snapshot } from "./Support.js"

const withoutTenant = (lines: ReadonlyArray<string>) => lines.slice(1)

const backends = [Backend.memory(), Backend.sqlite(), Backend.postgres(inject("pgUrl"))]

for (const backend of backends) {
  describe(backend.name, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("an export restores into a fresh tenant byte for byte, and every read path answers the same", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          const target = Backend.freshTenant()
          const seeded = yield* seed().pipe(as(source))
          const first = yield* exportLines.pipe(as(source))
          const verified = yield* Verify.lines(Stream.fromIterable(first))
          assert.deepStrictEqual(
            { runs: verified.runs, records: verified.records, cases: verified.cases },
            { runs: 4, records: 607, cases: 2 },
          )
          const restored = yield* Restore.restore(() => Stream.fromIterable(first), { batch: 64 }).pipe(as(target))
          assert.deepStrictEqual(restored, { records: 607, cases: 2, keptRecords: 0, keptCases: 0, sealed: 0 })
          const second = yield* exportLines.pipe(as(target))
          assert.deepStrictEqual(withoutTenant(second), withoutTenant(first))
          assert.notStrictEqual(second[0], first[0])
          assert.deepStrictEqual(yield* snapshot(seeded).pipe(as(target)), yield* snapshot(seeded).pipe(as(source)))
        }),
      )

      it.effect("a restored run concluded succeeded or swept is sealed; a failed one can be resumed", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          const target = Backend.freshTenant()
          const seeded = yield* seed(3).pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          yield* Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target))
          const [sealed, failed, open, swept] = seeded.runs
          const tryAppend = (run: (typeof seeded.runs)[number] | undefined) =>
            Effect.gen(function* () {
              const journal = yield* JournalStore
              if (run === undefined) return "missing"
              const lease = yield* journal.acquire(run, "resumer", 60)
              // A restored run has no lease: the first acquire after a restore is epoch 1.
              assert.strictEqual(lease.epoch, 1)
              const written = yield* Effect.either(journal.append(run, lease.epoch, [Fx.note("after restore")]))
              return Either.isLeft(written) ? written.left._tag : "appended"
            }).pipe(as(target))
          assert.deepStrictEqual(
            [yield* tryAppend(sealed), yield* tryAppend(failed), yield* tryAppend(open), yield* tryAppend(swept)],
            ["RunSealed", "appended", "appended", "RunSealed"],
          )
        }),
      )
    })
  })
}

describe("across backends", () => {
  const sqlite = Backend.sqlite()
  const postgres = Backend.postgres(inject("pgUrl"))
  const second = Backend.sqlite()
  it.live(
    "SQLite → PostgreSQL → SQLite: each export equals the first but for the tenant, and the read paths agree",
    () =>
      Effect.gen(function* () {
        const [a, b, c] = [Backend.freshTenant(), Backend.freshTenant(), Backend.freshTenant()]
        const seeded = yield* seed().pipe(as(a), Effect.provide(sqlite.layer))
        const fromSqlite = yield* exportLines.pipe(as(a), Effect.provide(sqlite.layer))
        const before = yield* snapshot(seeded).pipe(as(a), Effect.provide(sqlite.layer))
        yield* Restore.restore(() => Stream.fromIterable(fromSqlite)).pipe(as(b), Effect.provide(postgres.layer))
        const fromPostgres = yield* exportLines.pipe(as(b), Effect.provide(postgres.layer))
        assert.deepStrictEqual(withoutTenant(fromPostgres), withoutTenant(fromSqlite))
        assert.deepStrictEqual(yield* snapshot(seeded).pipe(as(b), Effect.provide(postgres.layer)), before)
        yield* Restore.restore(() => Stream.fromIterable(fromPostgres)).pipe(as(c), Effect.provide(second.layer))
        const back = yield* exportLines.pipe(as(c), Effect.provide(second.layer))
        assert.deepStrictEqual(withoutTenant(back), withoutTenant(fromSqlite))
        assert.deepStrictEqual(yield* snapshot(seeded).pipe(as(c), Effect.provide(second.layer)), before)
      }),
  )
})
