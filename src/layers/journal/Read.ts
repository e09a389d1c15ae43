/**
 * The journal's reads: a run's records (whole, in pages, verified against its chain, those its
 * view needs), its head, and the listings by outcome, by recent activity, by case and by run id.
 */
import { Effect, Option } from "effect"
import * as Digest from "../../domain/Digest.js"
import type * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import { Corrupt } from "../../errors/StoreError.js"
import type { JournalStore } from "../../services/JournalStore.js"
import { decodeRows } from "../internal/Columns.js"
import { ActivityRow, JournalRow, RECORD_COLUMNS, RunRow, toRecord, toRecords } from "../internal/JournalRows.js"
import * as Sql from "../internal/Sql.js"
import * as ViewRecords from "../internal/ViewRecords.js"
import type { Hints } from "./Hints.js"
import type { Statements } from "./Statements.js"

export const make = (
  s: Statements,
  hints: Hints,
): Pick<
  JournalStore["Type"],
  "read" | "head" | "runsByOutcome" | "recentRuns" | "caseHistory" | "verify" | "runs" | "readPage" | "viewRecords"
> => {
  const { sql, dialect, headOf, readFrom, viewFirst, viewAnnounced } = s
  const { remember } = hints
  return {
    read: (run, from) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const records = yield* toRecords(yield* readFrom(tenant, run, Math.floor(from)))
        // The last record read is the head a resume of the run writes on next.
        remember(tenant, run, records)
        return records
      }).pipe(Sql.orBackend),

    viewRecords: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const decided = ViewRecords.decisions(yield* toRecords(yield* viewFirst(tenant, run)))
        const keys = ViewRecords.keysOf(decided)
        const notes = ViewRecords.undecided(decided)
        if (keys.length === 0 && notes.length === 0) return decided
        const after = notes[0]?.seq ?? Number.MAX_SAFE_INTEGER
        const announced = yield* toRecords(yield* viewAnnounced(keys.length)(tenant, run, after, ...keys))
        return ViewRecords.complete(decided, notes, announced)
      }).pipe(Sql.orBackend),

    head: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* headOf(tenant, run)
      }).pipe(Sql.orBackend),

    runsByOutcome: (outcome, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT run_id FROM run_outcome WHERE tenant = ${tenant} AND outcome = ${outcome}
           ORDER BY ordinal DESC, run_id DESC LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_outcome")),
        )
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),
    recentRuns: (after, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Strictly after the cursor in (updated_at desc, run desc): the order is total, so pages neither overlap nor skip.
        const rows = yield* sql`
          SELECT run_id, updated_at, case_id FROM run_activity
           WHERE tenant = ${tenant}
           ${Option.match(after, {
             onNone: () => sql.literal(""),
             onSome: (c) =>
               sql`AND (updated_at < ${c.updatedAt} OR (updated_at = ${c.updatedAt} AND run_id < ${c.run}))`,
           })}
           ORDER BY updated_at DESC, run_id DESC LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(ActivityRow, "run_activity")),
        )
        return rows.map(
          (r): Journal.RecentRun => ({ run: r.run_id, updatedAt: r.updated_at, case: Option.fromNullable(r.case_id) }),
        )
      }).pipe(Sql.orBackend),

    caseHistory: (kase, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Run ids are time-ordered, so (run, seq) is oldest first.
        const rows = yield* sql`
          SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
           WHERE tenant = ${tenant} AND case_id = ${kase}
           ORDER BY run_id, seq LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(JournalRow, "journal")))
        return yield* toRecords(rows)
      }).pipe(Sql.orBackend),
    verify: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* dialect.read(
          sql`SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
               WHERE tenant = ${tenant} AND run_id = ${run} ORDER BY seq`.pipe(
            Effect.flatMap(decodeRows(JournalRow, "journal")),
          ),
        )
        let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
        for (const row of rows) {
          const expected = head.seq + 1
          // A gap names the first missing seq, not the row after it.
          if (row.seq !== expected)
            return yield* new Corrupt({ detail: `journal: seq ${expected} is missing`, seq: expected })
          const record = yield* toRecord(row)
          if (record.prevHash !== head.hash)
            return yield* new Corrupt({ detail: "journal: prev_hash does not match the predecessor", seq: row.seq })
          // Recomputed from the stored bytes, never from a re-serialisation of the decoded record.
          if (Digest.chain(head.hash, row.raw) !== record.hash)
            return yield* new Corrupt({ detail: "journal: hash does not match the stored bytes", seq: row.seq })
          head = { seq: row.seq, hash: record.hash }
        }
        return head
      }).pipe(Sql.orBackend),

    runs: (after, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Every append writes the run's activity row in its transaction, so this primary key lists exactly the written runs.
        const rows = yield* sql`
          SELECT run_id FROM run_activity WHERE tenant = ${tenant}
           ${Option.match(after, { onNone: () => sql.literal(""), onSome: (a) => sql`AND run_id > ${a}` })}
           ORDER BY run_id LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(RunRow, "run_activity")))
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),

    readPage: (run, from, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
           WHERE tenant = ${tenant} AND run_id = ${run} AND seq >= ${Math.floor(from)}
           ORDER BY seq LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(JournalRow, "journal")))
        return yield* toRecords(rows)
      }).pipe(Sql.orBackend),
  }
}
