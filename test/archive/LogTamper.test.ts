/**
 * An export held to the transparency log (§6.5, §9.2): the export of an integrated tenant
 * verifies against its own checkpoint, signed, and extends a checkpoint an auditor kept. Then
 * the history is changed, in the export file and, where the backend is a database, in the store
 * before the export: `verify` must name what changed (the finding, and the run or position), and
 * restore must refuse what does not match, writing nothing. The last case is the one only a kept
 * checkpoint can catch: an operator who rewrites the log and signs it again.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Either, Option, Stream } from "effect"
import { inject } from "vitest"
import type * as LogCheck from "../../src/archive/LogCheck.js"
import * as Restore from "../../src/archive/Restore.js"
import * as Verify from "../../src/archive/Verify.js"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as LogKey from "../../src/domain/LogKey.js"
import type * as SignedNote from "../../src/domain/SignedNote.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { deploymentKey, NOW, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed } from "./Support.js"

type Lines = ReadonlyArray<string>

const parsed = (line: string) =>
  JSON.parse(line) as { kind: string; run?: string; index?: number; outcome?: string; records?: number }

/** The log positions of the export's leaves, by run. */
const positions = (lines: Lines) =>
  new Map(lines.map(parsed).flatMap((l) => (l.kind.endsWith(".leaf") ? [[l.run as string, l.index as number]] : [])))

/** The export without run `run`'s records, its trailer counting what is left: damage only the log can see. */
const withoutRun = (lines: Lines, run: string): Lines => {
  const kept = lines.filter((l) => {
    const p = parsed(l)
    return !(p.kind.endsWith(".record") && p.run === run)
  })
  const removed = lines.length - kept.length
  const end = JSON.parse(kept[kept.length - 1] as string) as { runs: number; records: number }
  return [...kept.slice(0, -1), JSON.stringify({ ...end, runs: end.runs - 1, records: end.records - removed })]
}

/** The export with `change` made to run `run`'s leaf line (or the line removed when it returns undefined). */
const leafChanged = (lines: Lines, run: string, change: (leaf: Record<string, unknown>) => unknown): Lines =>
  lines.flatMap((l) => {
    const p = parsed(l)
    if (!(p.kind.endsWith(".leaf") && p.run === run)) return [l]
    const changed = change(JSON.parse(l) as Record<string, unknown>)
    return changed === undefined ? [] : [JSON.stringify(changed)]
  })

/** Verified with the leaves in memory, and spilled to files one and two at a time: the same result, returned. */
const verify = (lines: Lines, trust: LogCheck.Trust = {}) =>
  Effect.gen(function* () {
    const inMemory = yield* Effect.either(Verify.lines(Stream.fromIterable(lines), undefined, trust))
    for (const leavesInMemory of [1, 2]) {
      const spilled = yield* Effect.either(
        Verify.lines(Stream.fromIterable(lines), undefined, trust, { leavesInMemory }),
      )
      assert.deepStrictEqual(plain(spilled), plain(inMemory), `the leaves spilled ${leavesInMemory} at a time`)
    }
    return inMemory
  })

const plain = (result: Either.Either<Verify.Verified, unknown>) => Either.mapLeft(result, (e) => ({ ...(e as object) }))

/** The findings of a mismatch as [kind, run, position] (null where a finding names none), or the verified log. */
const findingsOf = (result: Either.Either<Verify.Verified, unknown>): string | Array<unknown> => {
  if (Either.isRight(result)) return "verified"
  const e = result.left as LogCheck.CheckpointMismatch
  assert.strictEqual(e._tag, "CheckpointMismatch", String(e))
  return e.findings.map((f) => [f.finding, f.run ?? null, f.index ?? null])
}

/**
 * A tenant with the archive seed (a sealed run, a sealed sweep-evidence run, two open runs, cases)
 * and `extra` more sealed runs (every third sealed before writing anything), integrated and
 * signed; the checkpoint an auditor keeps, and the export.
 */
const logged = (extra = 5) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const log = yield* LogStore
    const seeded = yield* seed(3)
    const more: Array<RunId> = []
    for (let i = 1; i <= extra; i++) more.push((yield* sealed(journal, i)).run)
    const { key, verifier } = deploymentKey()
    yield* log.integrate(key, NOW, 1_000)
    const stored = Option.getOrThrow(yield* log.checkpoint())
    const kept = Either.getOrThrow(Checkpoint.open(stored.note, [verifier]))
    // The seed's first run: sealed `succeeded` after three records, and the first leaf of the log.
    const target = seeded.runs[0] as RunId
    return { key, verifier, kept, target, more, lines: yield* exportLines }
  })

/** Restore of `lines` into a fresh tenant is refused with `tag`, and the tenant stays empty. */
const refusedByRestore = (lines: Lines, tag: string) =>
  Effect.gen(function* () {
    const target = Backend.freshTenant()
    const refused = yield* Effect.flip(Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target)))
    assert.strictEqual(refused._tag, tag)
    assert.deepStrictEqual(yield* (yield* JournalStore).runs(Option.none(), 10).pipe(as(target)), [])
    assert.deepStrictEqual(yield* (yield* CaseStore).cases(Option.none(), 10).pipe(as(target)), [])
  })

const trusted = (s: { verifier: SignedNote.VerifierKey; kept: Checkpoint.Checkpoint }): LogCheck.Trust => ({
  verifier: s.verifier,
  kept: s.kept,
})

const backends = [Backend.memory(), Backend.sqlite(), Backend.postgres(inject("pgUrl"))]

for (const backend of backends) {
  describe(`export and the log: ${backend.name}`, () => {
    Backend.battery(backend, (test, sql) => {
      test("an integrated tenant's export verifies against its signed checkpoint and extends a kept one", () =>
        Effect.gen(function* () {
          const s = yield* logged()
          const leaves = s.lines.map(parsed).filter((l) => l.kind.endsWith(".leaf"))
          assert.deepStrictEqual(
            leaves.map((l) => l.index),
            Array.from({ length: s.kept.size }, (_, i) => i),
          )
          const verified = Either.getOrThrow(yield* verify(s.lines, trusted(s)))
          // The two open runs of the seed have no leaf; the runs sealed bare have no lines.
          assert.deepStrictEqual(Option.getOrThrow(verified.log), {
            origin: s.kept.origin,
            size: 7,
            root: s.kept.root,
            signature: "verified",
            unlogged: 2,
            kept: Option.some({ size: 7, root: s.kept.root, added: 0 }),
          })
          yield* refusedByRestore(withoutRun(s.lines, s.target), "CheckpointMismatch")

          // Later: more seals, a new checkpoint; the new export extends the one kept.
          const journal = yield* JournalStore
          yield* sealed(journal, 2)
          yield* sealed(journal, 1)
          yield* (yield* LogStore).integrate(s.key, NOW, 1_000)
          const later = yield* exportLines
          const extended = Either.getOrThrow(yield* verify(later, trusted(s)))
          assert.deepStrictEqual(
            Option.map(extended.log, (l) => [l.size, l.kept]),
            Option.some([9, Option.some({ size: 7, root: s.kept.root, added: 2 })]),
          )
          // The older export held to the newer checkpoint: the runs sealed since are missing from it.
          const newer = Either.getOrThrow(
            Checkpoint.open(Option.getOrThrow(yield* (yield* LogStore).checkpoint()).note, [s.verifier]),
          )
          assert.deepStrictEqual(findingsOf(yield* verify(s.lines, { verifier: s.verifier, kept: newer })), [
            ["behind", null, null],
          ])
        }).pipe(Backend.asFreshTenant))

      test("a tenant never integrated exports no checkpoint and no leaves; a kept checkpoint cannot hold it", () =>
        Effect.gen(function* () {
          yield* seed(3)
          const lines = yield* exportLines
          assert.isFalse(lines.some((l) => parsed(l).kind.endsWith(".leaf")))
          assert.isFalse("checkpoint" in (JSON.parse(lines[0] as string) as object))
          assert.isTrue(Option.isNone(Either.getOrThrow(yield* verify(lines)).log))
          const other = yield* logged().pipe(as(Backend.freshTenant()))
          assert.deepStrictEqual(findingsOf(yield* verify(lines, trusted(other))), [["no_checkpoint", null, null]])
        }).pipe(Backend.asFreshTenant))

      test("an export with a logged run's records taken out names the run and its position", () =>
        Effect.gen(function* () {
          const s = yield* logged()
          const at = positions(s.lines).get(s.target)
          const cut = withoutRun(s.lines, s.target)
          // The file alone is sound: only the log knows the run was there.
          const expected = [["missing", s.target, at]]
          assert.deepStrictEqual(findingsOf(yield* verify(cut)), expected)
          assert.deepStrictEqual(findingsOf(yield* verify(cut, trusted(s))), expected)
          yield* refusedByRestore(cut, "CheckpointMismatch")
        }).pipe(Backend.asFreshTenant))

      test("a logged run the trailer lists as unreadable is neither missing nor altered: the export is incomplete, as it says", () =>
        Effect.gen(function* () {
          const s = yield* logged()
          const records = s.lines.filter((l) => parsed(l).kind.endsWith(".record") && parsed(l).run === s.target)
          const last = JSON.parse(records[records.length - 1] as string) as { seq: number }
          const end = JSON.parse(s.lines[s.lines.length - 1] as string) as { records: number }
          const cut = [
            ...s.lines.slice(0, -1).filter((l) => l !== records[records.length - 1]),
            JSON.stringify({
              ...end,
              records: end.records - 1,
              unreadable: [{ run: s.target, seq: last.seq, detail: "hash is not SHA-256(prev_hash ‖ raw)" }],
            }),
          ]
          const verified = Either.getOrThrow(yield* verify(cut, trusted(s)))
          assert.deepStrictEqual(
            verified.unreadable.map((u) => u.run),
            [s.target],
          )
          // Its records all gone, it is not missing either.
          const gone = withoutRun(cut, s.target)
          assert.isTrue(Either.isRight(yield* verify(gone, trusted(s))))
        }).pipe(Backend.asFreshTenant))

      test("a leaf line altered, or removed, is named; the kept checkpoint sees a fork", () =>
        Effect.gen(function* () {
          const s = yield* logged()
          const at = positions(s.lines).get(s.target) as number
          const outcome = leafChanged(s.lines, s.target, (l) => ({ ...l, outcome: "cancelled" }))
          assert.deepStrictEqual(findingsOf(yield* verify(outcome, trusted(s))), [
            ["root", null, null],
            ["altered", s.target, at],
            ["forked", null, null],
          ])
          const head = leafChanged(s.lines, s.target, (l) => ({ ...l, records: 2 }))
          assert.deepStrictEqual(findingsOf(yield* verify(head)), [
            ["root", null, null],
            ["altered", s.target, at],
          ])
          const removed = leafChanged(s.lines, s.target, () => undefined)
          assert.deepStrictEqual(findingsOf(yield* verify(removed, trusted(s))), [
            ["gap", null, at],
            ["root", null, null],
            ["forked", null, null],
          ])
          yield* refusedByRestore(outcome, "CheckpointMismatch")
        }).pipe(Backend.asFreshTenant))

      test("a checkpoint signed by another key is named with the verifier, and the kept checkpoint of another log is refused", () =>
        Effect.gen(function* () {
          const s = yield* logged()
          const forger = deploymentKey()
          const header = JSON.parse(s.lines[0] as string) as { checkpoint: string }
          const note = Either.getOrThrow(LogKey.sign(forger.key, yield* Tenant, s.kept.size, s.kept.root))
          const forged = [JSON.stringify({ ...header, checkpoint: note }), ...s.lines.slice(1)]
          // Without the verifier key the forged note reads as a checkpoint; with it, it is named.
          assert.isTrue(Either.isRight(yield* verify(forged)))
          assert.deepStrictEqual(findingsOf(yield* verify(forged, { verifier: s.verifier })), [
            ["unsigned", null, null],
          ])
          const elsewhere = yield* logged(1).pipe(as(Backend.freshTenant()))
          assert.deepStrictEqual(findingsOf(yield* verify(s.lines, { kept: elsewhere.kept })), [
            ["other_log", null, null],
          ])
        }).pipe(Backend.asFreshTenant))

      if (Option.isSome(sql)) {
        const sqlTest = sql.value

        sqlTest("a sealed run's records deleted from the store: its export names the run, and the fork", () =>
          Effect.gen(function* () {
            const s = yield* logged()
            const tenant = yield* Tenant
            const db = yield* SqlClient.SqlClient
            yield* db`DELETE FROM journal WHERE tenant = ${tenant} AND run_id = ${s.target}`
            const lines = yield* exportLines
            const at = positions(s.lines).get(s.target)
            assert.deepStrictEqual(findingsOf(yield* verify(lines, trusted(s))), [
              ["root", null, null],
              ["missing", s.target, at],
              ["forked", null, null],
            ])
          }).pipe(Backend.asFreshTenant),
        )

        sqlTest("a sealed run deleted with its seal: its export names the position left empty", () =>
          Effect.gen(function* () {
            const s = yield* logged()
            const tenant = yield* Tenant
            const db = yield* SqlClient.SqlClient
            yield* db`DELETE FROM journal WHERE tenant = ${tenant} AND run_id = ${s.target}`
            yield* db`DELETE FROM run_seal WHERE tenant = ${tenant} AND run_id = ${s.target}`
            const lines = yield* exportLines
            const at = positions(s.lines).get(s.target)
            assert.deepStrictEqual(findingsOf(yield* verify(lines, trusted(s))), [
              ["gap", null, at],
              ["root", null, null],
              ["forked", null, null],
            ])
            yield* refusedByRestore(lines, "CheckpointMismatch")
          }).pipe(Backend.asFreshTenant),
        )

        sqlTest("a leaf altered in the store: its export names the run", () =>
          Effect.gen(function* () {
            const s = yield* logged()
            const tenant = yield* Tenant
            const db = yield* SqlClient.SqlClient
            yield* db`UPDATE run_seal SET outcome = 'cancelled' WHERE tenant = ${tenant} AND run_id = ${s.target}`
            const lines = yield* exportLines
            assert.deepStrictEqual(findingsOf(yield* verify(lines, trusted(s))), [
              ["root", null, null],
              ["altered", s.target, positions(s.lines).get(s.target)],
              ["forked", null, null],
            ])
          }).pipe(Backend.asFreshTenant),
        )

        sqlTest("history rewritten and signed again verifies alone; the kept checkpoint names the fork", () =>
          Effect.gen(function* () {
            const s = yield* logged()
            const tenant = yield* Tenant
            const db = yield* SqlClient.SqlClient
            const at = positions(s.lines).get(s.target) as number
            // The operator deletes a run, closes the gap in the positions and rebuilds the log with its own key.
            yield* db`DELETE FROM journal WHERE tenant = ${tenant} AND run_id = ${s.target}`
            yield* db`DELETE FROM run_seal WHERE tenant = ${tenant} AND run_id = ${s.target}`
            yield* db`UPDATE run_seal SET log_position = log_position + 1000000 WHERE tenant = ${tenant} AND log_position > ${at}`
            yield* db`UPDATE run_seal SET log_position = log_position - 1000001 WHERE tenant = ${tenant} AND log_position > 1000000`
            yield* db`UPDATE log_sequence SET size = size - 1 WHERE tenant = ${tenant}`
            yield* db`DELETE FROM log_node WHERE tenant = ${tenant}`
            yield* db`DELETE FROM log_checkpoint WHERE tenant = ${tenant}`
            yield* db`DELETE FROM log_tree WHERE tenant = ${tenant}`
            // and seals on, so the new log outgrows the checkpoint the auditor kept.
            yield* sealed(yield* JournalStore, 2)
            yield* sealed(yield* JournalStore, 1)
            yield* (yield* LogStore).integrate(s.key, NOW, 1_000)
            const lines = yield* exportLines
            const alone = Either.getOrThrow(yield* verify(lines, { verifier: s.verifier }))
            assert.deepStrictEqual(
              Option.map(alone.log, (l) => [l.size, l.signature]),
              Option.some([8, "verified"]),
            )
            assert.deepStrictEqual(findingsOf(yield* verify(lines, trusted(s))), [["forked", null, null]])
          }).pipe(Backend.asFreshTenant),
        )
      }
    })
  })
}
