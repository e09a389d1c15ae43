/**
 * An export (§9.2) read back one run at a time, for the replay gate (§7.13): each run's records,
 * chain-checked from their bytes, handed on once the run's last line has been read, then dropped,
 * so memory holds one run whatever the size of the file.
 *
 * Unlike `Verify`, which stops at the first problem, a reader here goes on past damage: a record
 * that does not continue its run's chain, or a line that does not parse, makes that run (when the
 * line names one) `Damaged` with the line's number, and the rest of it is skipped; the other runs
 * are still read. What only the whole file shows (a missing trailer, counts that differ from it,
 * runs the trailer lists as unread) is `incomplete` in what `read` answers, and each run the
 * trailer lists is `Damaged` too.
 */
import { Effect, Either, Option, Stream } from "effect"
import * as Digest from "../domain/Digest.js"
import type { RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { TenantId } from "../domain/Tenant.js"
import * as Format from "./Format.js"

/** One run of the export: every record, in seq order; `line` is its first record's line (1-based). */
export interface RunRecords {
  readonly _tag: "Run"
  readonly run: RunId
  readonly line: number
  readonly records: ReadonlyArray<Journal.Record>
}

/** A line that could not be read: `run` when the line names one (that run is not handed on). */
export interface Damaged {
  readonly _tag: "Damaged"
  readonly line: number
  readonly run: Option.Option<string>
  readonly detail: string
}

/** The export's header was read: every run after it belongs to `tenant`. */
export interface Header {
  readonly _tag: "Header"
  readonly tenant: TenantId
}

export type Item = Header | RunRecords | Damaged

/** What the whole file showed once read. */
export interface Read {
  readonly tenant: Option.Option<TenantId>
  /** Runs the export holds (damaged ones included) and record lines it holds. */
  readonly runs: number
  readonly records: number
  /** Why the file is not the whole export it claims to be, if it is not. */
  readonly incomplete: Option.Option<string>
}

/**
 * Reads `lines`, calling `each` with the header, every run (in the export's order) and every damaged line;
 * `wants` says which runs to gather at all (a run it refuses is counted and skipped unread).
 */
export const read = <E, R, E2, R2>(
  lines: Stream.Stream<string, E, R>,
  each: (item: Item) => Effect.Effect<void, E2, R2>,
  wants: (run: RunId) => boolean = () => true,
): Effect.Effect<Read, E | E2, R | R2> =>
  Effect.suspend(() => {
    const reader = make(wants)
    return Stream.runForEachChunk(lines, (texts) => Effect.forEach(reader.feed(texts), each, { discard: true })).pipe(
      Effect.zipRight(
        Effect.suspend(() => Effect.as(Effect.forEach(reader.end(), each, { discard: true }), reader.result())),
      ),
    )
  })

// internal

const make = (wants: (run: RunId) => boolean) => {
  let n = 0
  let tenant: Option.Option<TenantId> = Option.none()
  let trailer: Option.Option<Format.End> = Option.none()
  let afterTrailer = false
  let runs = 0
  let records = 0
  // The run being read: its id, whether it is gathered, its head and records so far.
  let run: Option.Option<RunId> = Option.none()
  let gathering = false
  let first = 0
  let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
  let held: Array<Journal.Record> = []

  const close = (out: Array<Item>) => {
    if (Option.isSome(run) && gathering) out.push({ _tag: "Run", run: run.value, line: first, records: held })
    gathering = false
    held = []
  }

  const damage = (out: Array<Item>, detail: string, named: Option.Option<string>) => {
    out.push({ _tag: "Damaged", line: n, run: named, detail })
    // The run this line belongs to is not handed on: what is left of it cannot be trusted.
    if (Option.isSome(run) && Option.isSome(named) && named.value === run.value) {
      gathering = false
      held = []
    }
  }

  const startRun = (out: Array<Item>, id: RunId): boolean => {
    if (Option.isSome(run) && Buffer.compare(Buffer.from(run.value), Buffer.from(id)) >= 0) {
      damage(out, `run ${id} comes after ${run.value}: runs are out of order or repeated`, Option.some(id))
      return false
    }
    close(out)
    run = Option.some(id)
    runs += 1
    gathering = wants(id)
    first = n
    head = { seq: 0, hash: Digest.ZERO }
    return true
  }

  const line = (out: Array<Item>, text: string) => {
    n += 1
    if (afterTrailer) return damage(out, "a line after the trailer", Option.none())
    const parsed = Format.parse(text)
    if (Either.isLeft(parsed)) return damage(out, parsed.left, runNamedBy(text))
    const item = parsed.right
    switch (item._tag) {
      case "Header":
        if (Option.isSome(tenant)) return damage(out, "a second header", Option.none())
        tenant = Option.some(item.header.tenant)
        out.push({ _tag: "Header", tenant: item.header.tenant })
        return
      case "Leaf":
        return
      case "Record": {
        const r = item.record
        records += 1
        if ((Option.isNone(run) || run.value !== r.run) && !startRun(out, r.run)) return
        if (!gathering) return
        const body = Journal.checkVerbatim(r, head)
        if (Either.isLeft(body)) return damage(out, `seq ${r.seq}: ${body.left}`, Option.some(r.run))
        head = { seq: r.seq, hash: r.hash }
        held.push(
          new Journal.Record(
            { ...body.right, prevHash: r.prevHash, hash: r.hash, attestation: r.attestation, raw: r.raw },
            true,
          ),
        )
        return
      }
      case "Case":
        return close(out)
      case "End":
        close(out)
        afterTrailer = true
        trailer = Option.some(item.end)
        return
    }
  }

  return {
    feed: (texts: Iterable<string>): ReadonlyArray<Item> => {
      const out: Array<Item> = []
      for (const text of texts) line(out, text)
      return out
    },
    /** The last run, and the runs the trailer lists as unread. */
    end: (): ReadonlyArray<Item> => {
      const out: Array<Item> = []
      close(out)
      for (const u of Option.match(trailer, { onNone: () => [], onSome: (t) => t.unreadable })) {
        out.push({
          _tag: "Damaged",
          line: n,
          run: Option.some(u.run),
          detail: `the export could not read it from seq ${u.seq}: ${u.detail}`,
        })
      }
      return out
    },
    result: (): Read => ({ tenant, runs, records, incomplete: incompleteness() }),
  }

  function incompleteness(): Option.Option<string> {
    if (Option.isNone(tenant)) return Option.some(n === 0 ? "the export is empty" : "no header: not an export")
    if (Option.isNone(trailer)) return Option.some("no trailer: the export is truncated")
    const t = trailer.value
    if (t.runs !== runs) return Option.some(`the trailer counts ${t.runs} runs, the export holds ${runs}`)
    if (t.records !== records)
      return Option.some(`the trailer counts ${t.records} records, the export holds ${records}`)
    if (t.unreadable.length > 0)
      return Option.some(`the trailer lists ${t.unreadable.length} runs the export could not read`)
    return Option.none()
  }
}

/** The `run` a line that does not parse still names, if its JSON is readable that far. */
const runNamedBy = (text: string): Option.Option<string> => {
  try {
    const value = JSON.parse(text) as { readonly run?: unknown }
    return typeof value?.run === "string" ? Option.some(value.run) : Option.none()
  } catch {
    return Option.none()
  }
}
