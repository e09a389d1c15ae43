/**
 * Verifying an export (§9.2, §8.3 `verify`) without the store it came from: every run's chain is
 * re-hashed from `raw`, the order of lines is checked (header first, runs ascending with seqs
 * contiguous from 1, cases ascending after every record, the trailer last), and the counts are
 * checked against the trailer. The first problem is reported with its line number, and for a
 * record its run and seq, so an operator can find it. One pass, one line in memory at a time.
 *
 * With the transparency log (§6.5): an export whose header carries a checkpoint is held to it
 * (`LogCheck`): its leaves must hash to the checkpoint's root, and every logged run's records must
 * end at the head its leaf commits to; given `Trust`, the checkpoint's signature is checked and a
 * kept checkpoint must be a prefix of the export's log. What does not match is `CheckpointMismatch`
 * with every finding, after the whole file is read.
 *
 * What it cannot see: case lines carry no hash and no leaf commits to them, so a change to a case
 * line that still decodes is not detectable.
 */
import { Effect, Either, Option, Schema, Stream } from "effect"
import * as Digest from "../domain/Digest.js"
import type { CaseId, RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import * as Format from "./Format.js"
import * as LogCheck from "./LogCheck.js"

/** An export that fails verification: `line` is 1-based; `run` and `seq` name a record when the problem is in one. */
export class ExportDamaged extends Schema.TaggedError<ExportDamaged>()("ExportDamaged", {
  line: Schema.NonNegativeInt,
  run: Schema.optional(Schema.String),
  seq: Schema.optional(Schema.NonNegativeInt),
  detail: Schema.String,
}) {
  override get message(): string {
    const where = this.run === undefined ? "" : ` (run ${this.run} seq ${this.seq ?? 0})`
    return `export damaged at line ${this.line}${where}: ${this.detail}`
  }
}

/** What a verified export holds. `unreadable` repeats the trailer: runs the export could not read in full. */
export interface Verified {
  readonly tenant: string
  readonly runs: number
  readonly records: number
  readonly cases: number
  readonly unreadable: ReadonlyArray<Format.Unreadable>
  /** What the log check found to hold; none when the export carries no checkpoint. */
  readonly log: Option.Option<LogCheck.LogReport>
}

/** A checked line; a record comes with its decoded body. */
export type Checked =
  | Exclude<Format.Line, { readonly _tag: "Record" }>
  | {
      readonly _tag: "Record"
      readonly record: Journal.Verbatim
      readonly body: Journal.Position & { readonly kind: Journal.Kind }
    }

/**
 * The line-by-line checker. `feed` takes the next line and returns what it carries, or the
 * damage; `finish` checks what only the whole file shows (a trailer, its counts). Restore feeds the
 * same checker while it writes, so a file changed between its two passes is still caught. `close`
 * removes the log check's temporary files: call it when done, or when abandoning the file.
 */
export const checker = (trust: LogCheck.Trust = {}, options: LogCheck.Options = {}) => {
  let n = 0
  let section: "start" | "leaves" | "records" | "cases" | "ended" = "start"
  let tenant = ""
  let run: Option.Option<RunId> = Option.none()
  let lastRun: Option.Option<RunId> = Option.none()
  let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
  let last: Option.Option<Journal.Kind> = Option.none()
  let allSwept = true
  const log = LogCheck.make(trust, options)
  let lastCase: Option.Option<CaseId> = Option.none()
  let runs = 0
  let records = 0
  let cases = 0
  let end: Option.Option<Format.End> = Option.none()

  /** Damage at this line, unless the leaves read so far hold damage on an earlier one. */
  const damaged = (detail: string, at?: { readonly run: string; readonly seq: number }) => {
    if (section === "leaves") {
      const before = log.endLeaves()
      if (Either.isLeft(before)) return Either.left(new ExportDamaged(before.left))
    }
    return Either.left(
      new ExportDamaged({ line: n, detail, ...(at === undefined ? {} : { run: at.run, seq: at.seq }) }),
    )
  }

  /** The run being read is over: the log check hears where it ended. */
  const closeRun = () => {
    if (Option.isSome(run) && Option.isSome(last)) log.run({ run: run.value, head, last: last.value, allSwept })
    run = Option.none()
  }

  const feed = (text: string): Either.Either<Checked, ExportDamaged> => {
    n += 1
    if (section === "ended") return damaged("a line after the trailer")
    const parsed = Format.parse(text)
    if (Either.isLeft(parsed)) return damaged(parsed.left)
    const item = parsed.right
    if (section === "start" && item._tag !== "Header") return damaged("the first line is not the export header")
    if (section === "leaves" && item._tag !== "Leaf" && item._tag !== "Header") {
      // The first line after the leaves: damage only all of them show comes first.
      const over = log.endLeaves()
      if (Either.isLeft(over)) return Either.left(new ExportDamaged(over.left))
    }
    switch (item._tag) {
      case "Header": {
        if (section !== "start") return damaged("a second header")
        section = "leaves"
        tenant = item.header.tenant
        const logged = log.header(item.header.checkpoint)
        return Either.isLeft(logged) ? damaged(logged.left) : Either.right(item)
      }
      case "Leaf": {
        if (section !== "leaves") return damaged("a leaf line after the records began")
        const logged = log.leaf(item.index, item.leaf, n)
        return Either.isLeft(logged) ? damaged(logged.left) : Either.right(item)
      }
      case "Record": {
        const r = item.record
        const at = { run: r.run, seq: r.seq }
        if (section === "leaves") section = "records"
        if (section !== "records") return damaged("a record line after the cases", at)
        if (Option.isNone(run) || run.value !== r.run) {
          // Runs in id order (code point order, as the stores sort text), each once.
          if (Option.isSome(lastRun) && Buffer.compare(Buffer.from(lastRun.value), Buffer.from(r.run)) >= 0)
            return damaged(`run ${r.run} comes after ${lastRun.value}: runs are out of order or repeated`, at)
          closeRun()
          run = Option.some(r.run)
          lastRun = run
          head = { seq: 0, hash: Digest.ZERO }
          last = Option.none()
          allSwept = true
          runs += 1
        }
        const checked = Journal.checkVerbatim(r, head)
        if (Either.isLeft(checked))
          return damaged(r.seq > head.seq + 1 ? `seq ${head.seq + 1} is missing (next is ${r.seq})` : checked.left, at)
        head = { seq: r.seq, hash: r.hash }
        last = Option.some(checked.right.kind)
        allSwept = allSwept && checked.right.kind.kind === "Swept"
        records += 1
        return Either.right({ _tag: "Record", record: r, body: checked.right })
      }
      case "Case": {
        const id = item.item.case.id
        closeRun()
        if (section === "leaves" || section === "records") section = "cases"
        if (Option.isSome(lastCase) && Buffer.compare(Buffer.from(lastCase.value), Buffer.from(id)) >= 0)
          return damaged(`case ${id} comes after ${lastCase.value}: cases are out of order or repeated`)
        lastCase = Option.some(id)
        cases += 1
        return Either.right(item)
      }
      case "End": {
        closeRun()
        section = "ended"
        end = Option.some(item.end)
        return Either.right(item)
      }
    }
  }

  const finish = (): Either.Either<Verified, ExportDamaged | LogCheck.CheckpointMismatch> => {
    if (Option.isNone(end)) return damaged(n === 0 ? "the export is empty" : "no trailer: the export is truncated")
    const e = end.value
    const counted = [
      ["runs", e.runs, runs],
      ["records", e.records, records],
      ["cases", e.cases, cases],
    ] as const
    for (const [what, said, found] of counted) {
      if (said !== found) return damaged(`the trailer counts ${said} ${what}, the export holds ${found}`)
    }
    return Either.map(log.finish(e.unreadable), (logged) => ({
      tenant,
      runs,
      records,
      cases,
      unreadable: e.unreadable,
      log: logged,
    }))
  }

  return { feed, finish, close: log.close }
}

/**
 * Verifies the export's lines; `onLines` hears how many lines each chunk held (for progress).
 * Fails with `ExportDamaged` at the first problem, `CheckpointMismatch` with every finding of the
 * log check (`trust`: what the auditor brings), or with the source's own error. The checker's
 * temporary files are removed however it ends.
 */
export const lines = <E, R>(
  source: Stream.Stream<string, E, R>,
  onLines: (records: number, cases: number) => Effect.Effect<void> = () => Effect.void,
  trust: LogCheck.Trust = {},
  options: LogCheck.Options = {},
): Effect.Effect<Verified, ExportDamaged | LogCheck.CheckpointMismatch | E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => checker(trust, options)),
    (check) =>
      Stream.runForEachChunk(source, (chunk) =>
        Effect.suspend(() => {
          let records = 0
          let cases = 0
          for (const text of chunk) {
            const item = check.feed(text)
            if (Either.isLeft(item)) return Effect.fail(item.left)
            if (item.right._tag === "Record") records += 1
            else if (item.right._tag === "Case") cases += 1
          }
          return onLines(records, cases)
        }),
      ).pipe(Effect.flatMap(() => check.finish())),
    (check) => Effect.sync(check.close),
  )
