/**
 * Which of a run's records `viewRecords` answers (§6.7): the last one, and those its policy
 * decisions are read from (§7.12), chosen by what every store can see of a record: its kind, its
 * effect key, its place (seq, step, phase) and the unsealed `source` of an `EffectDone`. Sealing
 * (§9.1) hides an announcement's descriptor and a Note's text from the store, so an approval's
 * task wait is never found by its kind, only by where it stands:
 *
 * - Every `PolicyDenied`, `Released` and keyed `Note` (only approvals key a Note), and every
 *   `EffectDone` the worklist answered (a task's decision: `POST /events` refuses the decision
 *   kind, so nothing else sends one).
 * - The announcements under those Notes' keys (they name the approved action) and under those
 *   answers' keys (the task waits that were decided).
 * - While a keyed Note has no answer of its (phase, step) after it, that step's announcements
 *   after it: a step is sequential and announces nothing between an approval's Note and its wait,
 *   and nothing after a wait still open, so this is the open wait, read from the Note on (the
 *   tail), not from the journal's start.
 *
 * The SQL stores read a superset of the first bullet by columns and bytes (`DECISION_ROWS`), then
 * the announcements under the keys it names and after its first undecided Note, and keep what
 * `decisions` and `complete` keep, so every backend answers the same records.
 */
import { Option } from "effect"
import type { EffectKey } from "../../domain/EffectKey.js"
import type * as Journal from "../../domain/Journal.js"

/** The source of a task's decision event (the runtime's `WORKLIST_SOURCE`; test/layers/ViewRecords.test.ts pins them equal). */
export const WORKLIST_SOURCE = "agentplane://worklist"

/**
 * The SQL predicate of the records kept on their own, as migration `0010_view_reads` indexes it
 * (`journal_decisions`): the same text, so SQLite's planner, which matches a partial index's
 * terms literally, uses the index. The worklist's answer is found by the bytes of its `source`
 * (RFC 8785 text, where `source` is never sealed); a payload holding the same bytes is read and
 * dropped by `decisions`.
 */
export const DECISION_ROWS = (dialect: "pg" | "sqlite"): string =>
  `(kind IN ('PolicyDenied', 'Released') OR (kind = 'Note' AND effect_key IS NOT NULL) OR (kind = 'EffectDone' AND ${
    dialect === "pg"
      ? `position('"source":"${WORKLIST_SOURCE}"'::bytea IN raw) > 0`
      : `instr(raw, CAST('"source":"${WORKLIST_SOURCE}"' AS BLOB)) > 0`
  }))`

/** Whether `record` is kept on its own (the first bullet of the module comment). */
export const isDecision = (record: Journal.Record): boolean => {
  const k = record.kind
  if (k.kind === "PolicyDenied" || k.kind === "Released") return true
  if (k.kind === "Note") return Option.isSome(record.effectKey)
  return k.kind === "EffectDone" && k.source === WORKLIST_SOURCE && Option.isSome(record.effectKey)
}

/**
 * The records kept on their own, and the run's last record, of `read` (records of the run in any
 * order: a superset of those, with the last one), ascending by seq, each once.
 */
export const decisions = (read: ReadonlyArray<Journal.Record>): ReadonlyArray<Journal.Record> => {
  const last = read.reduce<Journal.Record | undefined>((a, r) => (a === undefined || r.seq > a.seq ? r : a), undefined)
  return ascending([...read.filter(isDecision), ...(last === undefined ? [] : [last])])
}

/** The effect keys whose announcements the view reads: the approvals' Notes' and the worklist's answers'. */
export const keysOf = (decided: ReadonlyArray<Journal.Record>): ReadonlyArray<EffectKey> =>
  [
    ...new Set(
      decided
        .filter((r) => isDecision(r) && (r.kind.kind === "Note" || r.kind.kind === "EffectDone"))
        .flatMap((r) => Option.toArray(r.effectKey)),
    ),
  ].sort()

/**
 * The keyed Notes of `decided` with no answer of their (phase, step) after them, each Note taking
 * the first one after it: the step waits on the Note's task before anything else, so that answer
 * is its wait's. Empty when every approval was decided.
 */
export const undecided = (decided: ReadonlyArray<Journal.Record>): ReadonlyArray<Journal.Record> => {
  const answers = new Map<string, Array<number>>()
  for (const r of decided) {
    if (r.kind.kind !== "EffectDone" || !isDecision(r)) continue
    const list = answers.get(placeOf(r)) ?? []
    list.push(r.seq)
    answers.set(placeOf(r), list)
  }
  return decided.filter((note) => {
    if (note.kind.kind !== "Note" || Option.isNone(note.effectKey)) return false
    const list = answers.get(placeOf(note))
    const index = list?.findIndex((seq) => seq > note.seq) ?? -1
    if (index < 0) return true
    list?.splice(index, 1)
    return false
  })
}

/**
 * `decided` with the announcements of `announced` (records of the run, any order: a superset of
 * those under `keysOf(decided)` and of those after the first undecided Note) that the view reads:
 * under one of those keys, or after an undecided Note of their (phase, step).
 */
export const complete = (
  decided: ReadonlyArray<Journal.Record>,
  notes: ReadonlyArray<Journal.Record>,
  announced: ReadonlyArray<Journal.Record>,
): ReadonlyArray<Journal.Record> => {
  const keys = new Set(keysOf(decided))
  const read = announced.filter(
    (r) =>
      r.kind.kind === "EffectStarted" &&
      ((Option.isSome(r.effectKey) && keys.has(r.effectKey.value)) ||
        notes.some((n) => placeOf(n) === placeOf(r) && n.seq < r.seq)),
  )
  return read.length === 0 ? decided : ascending([...decided, ...read])
}

/** The view's records from the run's whole journal: what the SQL stores' two reads answer. */
export const select = (records: ReadonlyArray<Journal.Record>): ReadonlyArray<Journal.Record> => {
  const decided = decisions(records)
  return complete(decided, undecided(decided), records)
}

// internal

const placeOf = (r: Journal.Record): string => `${r.phase}/${r.step}`

const ascending = (records: ReadonlyArray<Journal.Record>): ReadonlyArray<Journal.Record> => {
  const bySeq = new Map<number, Journal.Record>()
  for (const r of records) bySeq.set(r.seq, r)
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq)
}
