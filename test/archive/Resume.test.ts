/**
 * Restore in batches: a restore cut off at any line (the second pass's source fails there, as a
 * killed process would stop) leaves whole batches, and the same restore run again finishes it
 * from what is stored, ending where an uninterrupted one does. A tenant holding anything else is
 * refused, and a finished restore re-runs as a no-op.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { inject } from "vitest"
import * as Restore from "../../src/archive/Restore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Fx from "../conformance/journal/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed } from "./Support.js"

/** Pass one reads the whole export; pass two stops with a failure after `keep` lines. */
const cutAt = (lines: ReadonlyArray<string>, keep: number) => {
  let opened = 0
  return () => {
    opened += 1
    return opened === 1
      ? Stream.fromIterable(lines)
      : Stream.fromIterable(lines).pipe(Stream.take(keep), Stream.concat(Stream.fail("killed" as const)))
  }
}

const backends = [Backend.memory(), Backend.sqlite(), Backend.postgres(inject("pgUrl"))]

for (const backend of backends) {
  describe(backend.name, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("a restore cut off inside a run, at the cases or before the trailer finishes when run again", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          yield* seed().pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          const firstCase = lines.findIndex((l) => l.includes('"kind":"agentplane.export.case"'))
          for (const keep of [1, 300, firstCase + 1, lines.length - 1]) {
            const target = Backend.freshTenant()
            const cut = yield* Effect.flip(Restore.restore(cutAt(lines, keep), { batch: 50 }).pipe(as(target)))
            assert.strictEqual(cut, "killed")
            const again = yield* Restore.restore(() => Stream.fromIterable(lines), { batch: 50 }).pipe(as(target))
            assert.strictEqual(again.records + again.keptRecords, 607, `cut at ${keep}`)
            assert.strictEqual(again.cases + again.keptCases, 2, `cut at ${keep}`)
            if (keep >= 300) assert.isTrue(again.keptRecords > 0, `cut at ${keep} kept nothing`)
            const after = yield* exportLines.pipe(as(target))
            assert.deepStrictEqual(after.slice(1), lines.slice(1), `cut at ${keep}`)
          }
        }),
      )

      it.effect("a finished restore re-runs as a no-op", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          const target = Backend.freshTenant()
          yield* seed(5).pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          yield* Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target))
          const again = yield* Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target))
          assert.deepStrictEqual(again, { records: 0, cases: 0, keptRecords: 12, keptCases: 2, sealed: 0 })
        }),
      )

      it.effect("a tenant with a run of its own is refused and keeps only that run", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          const target = Backend.freshTenant()
          yield* seed(5).pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          const own = yield* Fx.written(2).pipe(as(target))
          const refused = yield* Effect.flip(Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target)))
          assert.strictEqual(refused._tag, "RestoreRefused")
          const journal = yield* JournalStore
          assert.deepStrictEqual(yield* journal.runs(Option.none(), 10).pipe(as(target)), [own.run])
        }),
      )

      it.effect("a restored tenant that has moved on refuses a second restore", () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          const target = Backend.freshTenant()
          const seeded = yield* seed(5).pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          yield* Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target))
          const journal = yield* JournalStore
          const failed = seeded.runs[1]
          if (failed === undefined) throw new Error("seed has a failed run")
          const lease = yield* journal.acquire(failed, "resumer", 60).pipe(as(target))
          yield* journal.append(failed, lease.epoch, [Fx.note("resumed after the restore")]).pipe(as(target))
          const refused = yield* Effect.flip(Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target)))
          assert.strictEqual(refused._tag, "RestoreRefused")
          assert.isTrue(refused.message.includes(failed), refused.message)
        }),
      )
    })
  })
}
