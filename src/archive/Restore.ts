/**
 * Restore (§9.3): rebuilds a tenant from an export. Two passes over the file: the first verifies
 * all of it (`Verify`), so tampered input is refused before anything is written; the second
 * writes, feeding the same checker again, so a file changed between the passes is still caught.
 * Records are written verbatim through `importRecords` in batches, each batch one transaction
 * that ends on a run boundary or inside a long run; a run's seal rides in the transaction of its
 * last record. Cases go through `importCase`, one transaction each, after every record.
 *
 * Decision, "re-run from nothing": an interrupted restore is re-run with the same command on the
 * same export, with nothing to clean up first. Since batches commit in export order, what an
 * interruption leaves is a prefix of the export. The second pass first walks that prefix,
 * checking each stored record and case equals the export's (same hash and bytes; the same case
 * line), and writes from the first thing missing. Anything else in the tenant (a run or case the
 * export lacks, a run longer than the export's, a case that differs) is `RestoreRefused`, so a
 * restore never merges into live data; an empty tenant is the prefix of length zero. A restore
 * that already finished re-runs as a no-op.
 *
 * Decision, what the export does not carry: it has no lease epochs, seal times, activity times
 * or admission times. A restored run has no lease (the next acquire is epoch 1); a run whose last
 * record concludes it `succeeded`, `quarantined`, `cancelled` or `compensated`, or whose records
 * are all `Swept` evidence, is sealed, as the runtime and the sweeper seal them; recent activity
 * and admission times are the restore's, and runs concluded by the restore are listed by
 * `runsByOutcome` in run id order.
 *
 * Decision, the transparency log (§6.5): an export with a checkpoint is restored to the same log.
 * Its runs are written unsealed, and once every record is in, they are sealed in the order of the
 * export's leaves (a leaf's run with no records too, at the zero head), so each takes the position
 * it had; then the sealed runs with no leaf, in export order. Integrated with the deployment's
 * key, the restored log has the source's root at every size up to the checkpoint, so checkpoints
 * auditors kept still hold, and `runsByOutcome` lists the runs in the order they were sealed. A
 * re-run finds the seals already made as a prefix of that order in the tenant's log, and makes
 * the rest. An export without a checkpoint seals as it writes.
 */
import { Effect, Either, Option, Schema, Stream } from "effect"
import type { CaseId, RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Backend, Corrupt, ImportRefused, RecordRefused } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { JournalStore } from "../services/JournalStore.js"
import { LogStore } from "../services/LogStore.js"
import * as Format from "./Format.js"
import type * as LogCheck from "./LogCheck.js"
import * as Sealed from "./Sealed.js"
import * as Verify from "./Verify.js"

/** The tenant holds something that is not a prefix of this export, or the export cannot be restored whole. */
export class RestoreRefused extends Schema.TaggedError<RestoreRefused>()("RestoreRefused", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `restore refused: ${this.detail}`
  }
}

export interface Restored {
  /** Records and cases this restore wrote. */
  readonly records: number
  readonly cases: number
  /** Records and cases an earlier, interrupted restore had already written and this one found intact. */
  readonly keptRecords: number
  readonly keptCases: number
  /** Runs sealed after their records, in the order of the export's log (none for an export without a checkpoint). */
  readonly sealed: number
}

export interface Options {
  /** Records per transaction (default 500). */
  readonly batch?: number
  /** Hears running counts of the records and cases gone through, written or kept. */
  readonly onProgress?: (records: number, cases: number) => Effect.Effect<void>
}

export type RestoreError =
  | Verify.ExportDamaged
  | LogCheck.CheckpointMismatch
  | RestoreRefused
  | ImportRefused
  | RecordRefused
  | Backend
  | Corrupt

/**
 * Restores the export `open` reads (called once per pass) into the tenant in context; fails
 * with `ExportDamaged` or `CheckpointMismatch` (nothing written), `RestoreRefused`, the stores' `ImportRefused` or
 * `RecordRefused`, or the source's own error.
 */
export const restore = <E, R>(
  open: () => Stream.Stream<string, E, R>,
  options: Options = {},
): Effect.Effect<Restored, RestoreError | E, R | JournalStore | CaseStore | LogStore | Tenant> =>
  Effect.gen(function* () {
    const verified = yield* Verify.lines(open())
    const [first] = verified.unreadable
    if (first !== undefined)
      return yield* new RestoreRefused({
        detail: `the export lists ${verified.unreadable.length} run(s) it could not read in full (first ${first.run} from seq ${first.seq}); restoring it would silently lose their records`,
      })
    const writer = yield* makeWriter(options.batch ?? 500)
    const progress = options.onProgress ?? (() => Effect.void)
    // The second pass checks every line again as it writes; its temporary files go however it ends.
    return yield* Effect.acquireUseRelease(
      Effect.sync(() => Verify.checker()),
      (check) =>
        Effect.gen(function* () {
          yield* Stream.runForEachChunk(open(), (chunk) =>
            Effect.gen(function* () {
              for (const text of chunk) {
                const item = check.feed(text)
                if (Either.isLeft(item)) return yield* item.left
                yield* writer.take(item.right)
              }
              yield* progress(writer.seen.records, writer.seen.cases)
            }),
          )
          const end = check.finish()
          if (Either.isLeft(end)) return yield* end.left
          return writer.result()
        }),
      (check) => Effect.sync(check.close),
    )
  })

// internal

const makeWriter = (batchSize: number) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const caseStore = yield* CaseStore
    const log = yield* LogStore
    const refuse = (detail: string) => Effect.fail(new RestoreRefused({ detail }))
    const foreign = "the tenant holds history this export lacks, so restoring would merge into it"

    let mode: "match" | "write" = "match"
    let section: "records" | "cases" = "records"
    let batch: Array<Journal.Verbatim> = []
    let seals: Array<Journal.ImportSeal> = []
    /** The run being read: its id, last seq, last body and whether all of it is sweep evidence. */
    let run: Option.Option<{ id: RunId; seq: number; last: Journal.Kind; swept: boolean }> = Option.none()
    let lastRun: Option.Option<RunId> = Option.none()
    let lastCase: Option.Option<CaseId> = Option.none()
    /** In match mode, the stored records of the current run from the next expected seq on. */
    let stored: ReadonlyArray<Journal.Record> = []
    /** With a checkpoint, seals wait for every record: the leaves' runs in log order, then the sealed runs with no leaf. */
    let inLogOrder = false
    const logged: Array<Journal.ImportSeal> = []
    const loggedRuns = new Set<RunId>()
    const unlogged: Array<Journal.ImportSeal> = []
    let storedAt = 0
    const seen = { records: 0, cases: 0 }
    const counts = { records: 0, cases: 0, keptRecords: 0, keptCases: 0, sealed: 0 }

    const flush = Effect.suspend(() => {
      const [head, ...rest] = batch
      const sealing = seals
      batch = []
      seals = []
      if (head === undefined) return Effect.void
      return Effect.tap(journal.importRecords([head, ...rest], sealing), (n) => {
        counts.records += n
      })
    })

    const sealOf = (r: { last: Journal.Kind; swept: boolean }) => Sealed.outcomeOf(r.last, r.swept)

    /** The tenant must hold nothing after `run` (none: no run at all), and no case yet. */
    const nothingAfter = (after: Option.Option<RunId>) =>
      Effect.gen(function* () {
        const later = yield* journal.runs(after, 1)
        if (later.length > 0) return yield* refuse(`${foreign}: run ${later[0]} is not in it where the tenant has it`)
        const anyCase = yield* caseStore.cases(Option.none(), 1)
        if (anyCase.length > 0)
          return yield* refuse(`${foreign}: case ${anyCase[0]?.id} exists before the export's runs are all restored`)
      })

    /** Closes the current run: in write mode its seal joins the batch; in match mode the stored run must end where the export's does. */
    const closeRun = Effect.gen(function* () {
      if (Option.isNone(run)) return
      const r = run.value
      const outcome = sealOf(r)
      if (inLogOrder) {
        if (Option.isSome(outcome) && !loggedRuns.has(r.id)) unlogged.push({ run: r.id, outcome: outcome.value })
      } else if (mode === "write" && Option.isSome(outcome)) seals.push({ run: r.id, outcome: outcome.value })
      if (mode === "match") {
        const head = yield* journal.head(r.id)
        if (head.seq !== r.seq)
          return yield* refuse(`${foreign}: run ${r.id} has ${head.seq} records, the export ${r.seq}`)
      }
      lastRun = Option.some(r.id)
      run = Option.none()
    })

    const toWrite = <R>(reason: Effect.Effect<void, RestoreRefused | Backend | Corrupt, R>) =>
      Effect.tap(reason, () => {
        mode = "write"
      })

    const takeRecord = (record: Journal.Verbatim, body: { readonly kind: Journal.Kind }) =>
      Effect.gen(function* () {
        seen.records += 1
        const startsRun = Option.isNone(run) || run.value.id !== record.run
        if (startsRun) {
          // The previous run ended: its seal decision is known, so the batch may end here.
          yield* closeRun
          if (mode === "write" && batch.length >= batchSize) yield* flush
          if (mode === "match") {
            const next = yield* journal.runs(lastRun, 1)
            const found = next[0]
            if (found === undefined) yield* toWrite(nothingAfter(lastRun))
            else if (found !== record.run)
              return yield* refuse(`${foreign}: run ${found} is not where the export has it`)
            else {
              stored = yield* journal.readPage(record.run, 1, batchSize)
              storedAt = 0
            }
          }
          run = Option.some({ id: record.run, seq: 0, last: body.kind, swept: true })
        } else if (mode === "write" && batch.length >= batchSize) {
          // Inside a long run: this batch ends mid-run, and the run's seal comes with its last records.
          yield* flush
        }
        const r = Option.getOrThrow(run)
        if (mode === "match") {
          if (storedAt >= stored.length && stored.length > 0) {
            stored = yield* journal.readPage(record.run, record.seq, batchSize)
            storedAt = 0
          }
          const mine = stored[storedAt]
          if (mine === undefined || mine.seq !== record.seq) {
            yield* toWrite(
              Effect.gen(function* () {
                const later = yield* journal.runs(Option.some(record.run), 1)
                if (later.length > 0) return yield* refuse(`${foreign}: run ${later[0]} follows a run left unfinished`)
                const anyCase = yield* caseStore.cases(Option.none(), 1)
                if (anyCase.length > 0)
                  return yield* refuse(`${foreign}: case ${anyCase[0]?.id} exists before the records are all restored`)
              }),
            )
          } else {
            if (
              mine.hash !== record.hash ||
              mine.prevHash !== record.prevHash ||
              Buffer.compare(Buffer.from(mine.raw), Buffer.from(record.raw)) !== 0
            )
              return yield* refuse(`${foreign}: record ${record.run}/${record.seq} differs from the export's`)
            storedAt += 1
            counts.keptRecords += 1
          }
        }
        if (mode === "write") batch.push(record)
        run = Option.some({ id: r.id, seq: record.seq, last: body.kind, swept: r.swept && body.kind.kind === "Swept" })
      })

    /** Leaves the records: the last run closes and its batch commits before any case is written. */
    const endRecords = Effect.gen(function* () {
      if (section === "cases") return
      section = "cases"
      yield* closeRun
      if (mode === "write") yield* flush
      else {
        const later = yield* journal.runs(lastRun, 1)
        if (later.length > 0) return yield* refuse(`${foreign}: run ${later[0]} is not in it`)
      }
      if (inLogOrder) yield* sealInLogOrder
    })

    /** The deferred seals, in log order, after those an interrupted restore already made. */
    const sealInLogOrder = Effect.gen(function* () {
      const order = [...logged, ...unlogged]
      let done = 0
      for (;;) {
        const page = yield* log.leaves(done, batchSize)
        for (const p of page) {
          const want = order[done]
          if (p.index !== done || p.leaf.run !== want?.run)
            return yield* refuse(
              `${foreign}: log position ${p.index} holds run ${p.leaf.run}, where the export's log has ${want?.run ?? "nothing"}`,
            )
          done += 1
        }
        if (page.length < batchSize) break
      }
      for (let i = done; i < order.length; i += batchSize) {
        const chunk = order.slice(i, i + batchSize)
        yield* journal.importRecords([], chunk)
        counts.sealed += chunk.length
      }
    })

    const takeCase = (item: Format.CaseItem) =>
      Effect.gen(function* () {
        seen.cases += 1
        yield* endRecords
        if (mode === "match") {
          const next = yield* caseStore.cases(lastCase, 1)
          const found = next[0]
          if (found === undefined) mode = "write"
          else if (found.id !== item.case.id)
            return yield* refuse(`${foreign}: case ${found.id} is not where the export has it`)
          else {
            const [deadlines, blobs] = yield* Effect.all([caseStore.deadlines(found.id), caseStore.blobsOf(found.id)])
            if (Format.caseLine({ case: found, deadlines, blobs }) !== Format.caseLine(item))
              return yield* refuse(`${foreign}: case ${found.id} differs from the export's`)
            counts.keptCases += 1
          }
        }
        if (mode === "write") {
          yield* caseStore.importCase(item.case, item.deadlines, item.blobs)
          counts.cases += 1
        }
        lastCase = Option.some(item.case.id)
      })

    const endCases = Effect.gen(function* () {
      yield* endRecords
      if (mode === "match") {
        const later = yield* caseStore.cases(lastCase, 1)
        if (later.length > 0) return yield* refuse(`${foreign}: case ${later[0]?.id} is not in it`)
      }
    })

    const take = (item: Verify.Checked) => {
      switch (item._tag) {
        case "Header":
          return Effect.sync(() => {
            inLogOrder = item.header.checkpoint !== undefined
          })
        case "Leaf":
          return Effect.sync(() => {
            logged.push({ run: item.leaf.run, outcome: item.leaf.outcome })
            loggedRuns.add(item.leaf.run)
          })
        case "Record":
          return takeRecord(item.record, item.body)
        case "Case":
          return takeCase(item.item)
        case "End":
          return endCases
      }
    }

    return { take, seen, result: (): Restored => ({ ...counts }) }
  })
