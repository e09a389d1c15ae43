/**
 * Holding an export to the transparency log (§6.5, §9.2), in the one pass `Verify` makes: the
 * header's checkpoint, the leaf lines after it, each run's records against its leaf, and, when an
 * auditor gives one, a checkpoint they kept. The leaves are hashed into the RFC 9162 tree as they
 * stream (the right edge only, O(log n)), so the export's root at the checkpoint's size, and at
 * a kept checkpoint's smaller size, come out of the same pass with no proof in the file.
 *
 * Two kinds of problem. A line that breaks the format (a leaf out of order, a leaf with no
 * checkpoint) is damage, reported by `Verify` with its line. A history that does not match its
 * log is a finding, and every finding is collected, so an auditor reads everything that changed:
 *
 * - `unsigned`: the checkpoint's signature does not verify with the verifier key given;
 * - `gap`: a position below the checkpoint's size has no leaf;
 * - `root`: the leaves do not hash to the checkpoint's root (a leaf altered, added or removed);
 * - `missing`: a run the log holds has no records in the export;
 * - `altered`: a run's records do not end at the head, count or outcome its leaf commits to;
 * - `no_checkpoint`, `other_log`, `behind`, `forked`: the export cannot be held to the kept
 *   checkpoint, is another log's, is older than it (the runs sealed since are missing), or its
 *   history at the kept size is not the one kept.
 *
 * Memory is bounded whatever the number of logged runs: the leaves come in log order and the
 * records in run-id order, so each leaf waits for its run's records in an external sort by run id
 * (`SpillSort`: `leavesInMemory` at a time, the rest in temporary files), read back as a cursor
 * that the runs' records advance; the runs with no records wait for the end the same way, sorted
 * by position. `close` removes the temporary files (`finish` does too).
 *
 * Decision, a run with two leaves: the sort finds it when the leaves end (`endLeaves`), or at the
 * first damage among the leaf lines if that comes first, and it is reported as it would be at its
 * line: the second leaf's line and position, and before any damage on a later line. So the first
 * problem reported is the same as if every run id were kept in memory as the leaves stream.
 *
 * Decision: a run without a leaf (open, or sealed after the checkpoint) is counted as `unlogged`,
 * not a finding: this export cannot tell a run sealed after its checkpoint from one added since;
 * a later checkpoint that does not hold it can. A logged run the trailer lists as unreadable is
 * not `missing`: the export already says it could not read it.
 */
import { Either, Option, Schema } from "effect"
import * as Checkpoint from "../domain/Checkpoint.js"
import * as Digest from "../domain/Digest.js"
import type { RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import * as LogLeaf from "../domain/LogLeaf.js"
import { EMPTY_ROOT } from "../domain/Merkle.js"
import * as MerkleNodes from "../domain/MerkleNodes.js"
import * as SignedNote from "../domain/SignedNote.js"
import * as Sealed from "./Sealed.js"
import * as SpillSort from "./SpillSort.js"

/** What an auditor brings: the deployment's verifier key, and a checkpoint they kept earlier. */
export interface Trust {
  readonly verifier?: SignedNote.VerifierKey
  readonly kept?: Checkpoint.Checkpoint
}

export const FindingKind = Schema.Literal(
  "unsigned",
  "gap",
  "root",
  "missing",
  "altered",
  "no_checkpoint",
  "other_log",
  "behind",
  "forked",
)
export type FindingKind = typeof FindingKind.Type

export const Finding = Schema.Struct({
  finding: FindingKind,
  run: Schema.optional(Schema.String),
  index: Schema.optional(Schema.NonNegativeInt),
  detail: Schema.String,
})
export type Finding = typeof Finding.Type

/** Leaf hashes integrated at a time. */
const BATCH = 1_024

/** Findings kept for the report; past it they are counted. */
export const MAX_FINDINGS = 100

/** The export's history is not the one its checkpoint, or the kept one, commits to. */
export class CheckpointMismatch extends Schema.TaggedError<CheckpointMismatch>()("CheckpointMismatch", {
  findings: Schema.Array(Finding),
  more: Schema.NonNegativeInt,
}) {
  override get message(): string {
    const [first] = this.findings
    const others = this.findings.length - 1 + this.more
    return `the export does not match the log: ${first?.detail ?? "no detail"}${others > 0 ? ` (and ${others} more)` : ""}`
  }
}

/** What the log check found to hold. */
export interface LogReport {
  readonly origin: string
  readonly size: number
  readonly root: Digest.Digest
  /** `verified` when a verifier key was given and signed the checkpoint. */
  readonly signature: "verified" | "unchecked"
  /** Runs in the export with no leaf: open, or sealed after the checkpoint. */
  readonly unlogged: number
  /** The kept checkpoint the export extends, and how many leaves it adds after it. */
  readonly kept: Option.Option<{ readonly size: number; readonly root: Digest.Digest; readonly added: number }>
}

/** A leaf waiting for its run's records: what it commits to, and where it is in the log and the file. */
interface Logged {
  readonly run: RunId
  readonly index: number
  readonly line: number
  readonly records: number
  readonly chainHead: Digest.Digest
  readonly outcome: Journal.RunOutcome
}

/** A logged run with no records, waiting for the trailer (a run it lists as unreadable is not missing). */
interface NoRecords {
  readonly run: RunId
  readonly index: number
  readonly line: number
}

/** The end of a run as the records show it. */
export interface RunEnd {
  readonly run: RunId
  readonly head: Journal.Head
  readonly last: Journal.Kind
  readonly allSwept: boolean
}

/** Leaves held in memory before a sorted batch of them goes to a temporary file. */
export const LEAVES_IN_MEMORY = 50_000

export interface Options {
  /** Leaves held in memory at a time (default `LEAVES_IN_MEMORY`). */
  readonly leavesInMemory?: number
  /** Where temporary files go (default `os.tmpdir()`). */
  readonly directory?: string
}

/** Damage only the whole of the leaves shows, at the line of the leaf it is in. */
export interface LeafDamage {
  readonly line: number
  readonly detail: string
}

export const make = (trust: Trust = {}, options: Options = {}) => {
  let checkpoint: Option.Option<Checkpoint.Checkpoint> = Option.none()
  let signature: LogReport["signature"] = "unchecked"
  // The tree's right edge, and leaf hashes not yet folded into it: integrating in batches takes
  // the root once a batch instead of once a leaf (17 hashes a leaf at 100k leaves).
  let edge: ReadonlyArray<Digest.Digest> = []
  let current: Digest.Digest = EMPTY_ROOT
  let integrated = 0
  let pending: Array<Digest.Digest> = []
  let count = 0
  let lastIndex = -1
  let keptRoot: Option.Option<Digest.Digest> = Option.none()
  let unlogged = 0
  let more = 0
  const inMemory = options.leavesInMemory ?? LEAVES_IN_MEMORY
  const sortOptions = options.directory === undefined ? {} : { directory: options.directory }
  const logged = SpillSort.make<Logged>({
    compare: (a, b) => SpillSort.byCodePoint(a.run, b.run),
    inMemory,
    ...sortOptions,
  })
  const noRecords = SpillSort.make<NoRecords>({ compare: (a, b) => a.index - b.index, inMemory, ...sortOptions })
  let ended: Either.Either<SpillSort.Cursor<Logged>, LeafDamage> | undefined
  let findings: Array<Finding> = []

  const find = (finding: Finding) => {
    if (findings.length < MAX_FINDINGS) findings.push(finding)
    else more += 1
  }

  /** The header's checkpoint note: a note that is not a checkpoint is damage; one the verifier key did not sign is a finding. */
  const header = (note: string | undefined): Either.Either<void, string> => {
    if (note === undefined) return Either.void
    const parsed = Either.flatMap(SignedNote.parse(note), (n) => Checkpoint.parse(n.text))
    if (Either.isLeft(parsed)) return Either.left(`the header's checkpoint: ${parsed.left.message}`)
    checkpoint = Option.some(parsed.right)
    if (trust.verifier !== undefined) {
      const opened = Checkpoint.open(note, [trust.verifier])
      if (Either.isRight(opened)) signature = "verified"
      else find({ finding: "unsigned", detail: `the header's checkpoint: ${opened.left.message}` })
    }
    if (trust.kept?.size === 0) keptRoot = Option.some(EMPTY_ROOT)
    return Either.void
  }

  /** One leaf line, at file line `line`. */
  const leaf = (index: number, value: LogLeaf.LogLeaf, line: number): Either.Either<void, string> => {
    if (Option.isNone(checkpoint)) return Either.left("a leaf line, but the header carries no checkpoint")
    if (index <= lastIndex)
      return Either.left(`leaf ${index} comes after ${lastIndex}: leaves are out of order or repeated`)
    if (index >= checkpoint.value.size)
      return Either.left(`leaf ${index} is past the checkpoint's size ${checkpoint.value.size}`)
    for (let missing = lastIndex + 1; missing < index; missing++)
      find({ finding: "gap", index: missing, detail: `log position ${missing} has no leaf in the export` })
    lastIndex = index
    logged.add({
      run: value.run,
      index,
      line,
      records: value.records,
      chainHead: value.chainHead,
      outcome: value.outcome,
    })
    pending.push(LogLeaf.hash(value))
    count += 1
    if (trust.kept !== undefined && count === trust.kept.size) keptRoot = Option.some(fold())
    else if (pending.length >= BATCH) fold()
    return Either.void
  }

  /** Integrates the pending leaf hashes; the root of the tree so far. */
  const fold = (): Digest.Digest => {
    if (pending.length > 0) {
      const done = MerkleNodes.integrate(integrated, edge, pending)
      edge = done.edge
      current = done.root
      integrated = done.size
      pending = []
    }
    return current
  }

  /**
   * The leaves are over (the first line after them, or damage among them): their root must be
   * the checkpoint's, and no run may have two leaves. Idempotent; `run` and `finish` need it first.
   */
  const endLeaves = (): Either.Either<void, LeafDamage> => {
    if (ended === undefined) ended = sortLeaves()
    return Either.map(ended, () => undefined)
  }

  const sortLeaves = (): Either.Either<SpillSort.Cursor<Logged>, LeafDamage> => {
    const sorted = logged.sorted()
    // Equal run ids are adjacent and, the sort being stable, in file order: the second of each is
    // a second leaf, and the one on the earliest line is what a check at each line would have met first.
    let second: Logged | undefined
    const pass = sorted.open()
    for (let prev = pass.next(), e = pass.next(); e !== undefined; prev = e, e = pass.next())
      if (prev !== undefined && prev.run === e.run && (second === undefined || e.line < second.line)) second = e
    if (second !== undefined)
      return Either.left({ line: second.line, detail: `run ${second.run} has a second leaf, at ${second.index}` })
    if (Option.isSome(checkpoint)) {
      const cp = checkpoint.value
      for (let missing = lastIndex + 1; missing < cp.size; missing++)
        find({ finding: "gap", index: missing, detail: `log position ${missing} has no leaf in the export` })
      const computed = fold()
      if (computed !== cp.root)
        find({
          finding: "root",
          detail: `the export's ${count} leaves hash to ${computed}, but its checkpoint of size ${cp.size} says ${cp.root}`,
        })
    }
    return Either.right(sorted.open())
  }

  /** The leaves in run-id order, from the first whose run's records are not yet over. */
  const cursor = (): SpillSort.Cursor<Logged> => {
    const e = endLeaves()
    if (Either.isLeft(e) || ended === undefined || Either.isLeft(ended))
      throw new Error(
        `LogCheck: the leaves are damaged, and the checker was fed on: ${Either.isLeft(e) ? e.left.detail : ""}`,
      )
    return ended.right
  }

  /** A logged run whose records are not in the export, unless it was sealed before it wrote anything (its leaf commits to 0 records at the zero head). */
  const noRecordsFor = (e: Logged) => {
    if (!(e.records === 0 && e.chainHead === Digest.ZERO)) noRecords.add({ run: e.run, index: e.index, line: e.line })
  }

  /** A run's records are over: a logged run must end where its leaf says. */
  const run = (end: RunEnd) => {
    const leaves = cursor()
    // Runs arrive in id order, so the leaves before this run's are of runs with no records.
    for (let e = leaves.peek(); e !== undefined && SpillSort.byCodePoint(e.run, end.run) < 0; e = leaves.peek())
      noRecordsFor(leaves.next() as Logged)
    const entry = leaves.peek()
    if (entry === undefined || entry.run !== end.run) {
      unlogged += 1
      return
    }
    leaves.next()
    const { index } = entry
    const at = { run: end.run, index }
    if (entry.records !== end.head.seq || entry.chainHead !== end.head.hash)
      find({
        finding: "altered",
        ...at,
        detail: `run ${end.run}: its leaf at ${index} commits to ${entry.records} records ending at ${entry.chainHead}, the export holds ${end.head.seq} ending at ${end.head.hash}`,
      })
    else {
      const outcome = Sealed.outcomeOf(end.last, end.allSwept)
      if (Option.isSome(outcome) && outcome.value !== entry.outcome)
        find({
          finding: "altered",
          ...at,
          detail: `run ${end.run}: its leaf at ${index} says ${entry.outcome}, its records conclude ${outcome.value}`,
        })
    }
  }

  /** Everything is read: logged runs never seen are missing; the kept checkpoint is compared. */
  const finish = (
    unreadable: ReadonlyArray<{ readonly run: string }>,
  ): Either.Either<Option.Option<LogReport>, CheckpointMismatch> => {
    try {
      const leaves = cursor()
      for (let e = leaves.next(); e !== undefined; e = leaves.next()) noRecordsFor(e)
      const cannotRead = new Set(unreadable.map((u) => u.run))
      // A run the trailer says was cut short ends early by its own account: not an alteration.
      findings = findings.filter((f) => !(f.finding === "altered" && f.run !== undefined && cannotRead.has(f.run)))
      const never = noRecords.sorted().open()
      for (let e = never.next(); e !== undefined; e = never.next())
        if (!cannotRead.has(e.run))
          find({
            finding: "missing",
            run: e.run,
            index: e.index,
            detail: `run ${e.run} is in the log at ${e.index} (line ${e.line}) but has no records in the export`,
          })
    } finally {
      close()
    }
    const kept = keptAgainst()
    if (findings.length > 0) return Either.left(new CheckpointMismatch({ findings, more }))
    return Either.right(
      Option.map(checkpoint, (cp) => ({
        origin: cp.origin,
        size: cp.size,
        root: cp.root,
        signature,
        unlogged,
        kept,
      })),
    )
  }

  /** Removes the temporary files; the checker is done, or abandoned. */
  const close = () => {
    logged.close()
    noRecords.close()
  }

  const keptAgainst = (): LogReport["kept"] => {
    const k = trust.kept
    if (k === undefined) return Option.none()
    if (Option.isNone(checkpoint)) {
      find({
        finding: "no_checkpoint",
        detail: "the export carries no checkpoint, so it cannot be held to the kept one",
      })
      return Option.none()
    }
    const cp = checkpoint.value
    if (k.origin !== cp.origin) {
      find({ finding: "other_log", detail: `the kept checkpoint is of ${k.origin}, the export's of ${cp.origin}` })
      return Option.none()
    }
    if (k.size > cp.size) {
      find({
        finding: "behind",
        detail: `the kept checkpoint has ${k.size} leaves, the export's log ${cp.size}: the ${k.size - cp.size} run(s) sealed at positions ${cp.size} to ${k.size - 1} are missing from it`,
      })
      return Option.none()
    }
    const at = Option.getOrUndefined(keptRoot)
    if (at !== k.root) {
      find({
        finding: "forked",
        detail: `at size ${k.size} the export's log has root ${at ?? "(leaves missing)"}, the kept checkpoint ${k.root}: the history forked, or a leaf below ${k.size} was altered, added or removed`,
      })
      return Option.none()
    }
    return Option.some({ size: k.size, root: k.root, added: cp.size - k.size })
  }

  return { header, leaf, endLeaves, run, finish, close }
}
