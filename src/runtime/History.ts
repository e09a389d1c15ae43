/**
 * The replay cursor (§7.2): a run's journal read back into what a re-execution consults.
 *
 * Effects are found by their slot (phase, step, ordinal) and attempt, never by their position in
 * the whole run: parallel steps interleave their records in whatever order they finished, so a
 * cursor over the run's global order would call a harmless reordering non-determinism (the
 * failure class behind DBOS's `gather` wedges). Within a slot the key is recomputed and compared.
 *
 * Records that carry no effect key (step boundaries, notes, deadline registrations, budget and
 * conclusion records) are replayed positionally within their (step, phase, kind): the n-th such
 * record a re-execution offers is skipped when the journal already holds an identical n-th one,
 * so a resume never writes a boundary twice yet still writes what a changed path really did.
 */
import { Option } from "effect"
import * as Canonical from "../domain/Canonical.js"
import { ZERO as ZERO_HASH } from "../domain/Digest.js"
import type { EffectKey } from "../domain/EffectKey.js"
import type { CaseId, StepId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import type { Phase } from "../domain/Phase.js"

/** One announced attempt and what the journal says became of it. */
export interface Attempt {
  readonly seq: number
  readonly key: EffectKey
  readonly kind: string
  readonly attempt: number
  readonly mutates: boolean
  /** The last outcome record for the key (`EffectDone`, `EffectFailed`, `EffectReconciled`); none: in doubt. */
  readonly outcome: Option.Option<Journal.Record>
  /** An `EffectFailed` was recorded for the key before its last outcome: the act reported its own doubt. */
  readonly failedFirst: boolean
}

export interface History {
  readonly records: ReadonlyArray<Journal.Record>
  readonly admitted: Option.Option<Extract<Journal.Kind, { kind: "RunAdmitted" }>>
  readonly frozen: Option.Option<Extract<Journal.Kind, { kind: "PlanFrozen" }>>
  readonly case: Option.Option<CaseId>
  /** Attempts by slot, in attempt order. */
  readonly slots: ReadonlyMap<string, ReadonlyArray<Attempt>>
  /**
   * Slots whose first attempt the replay has not reached yet, and markers' answers (`patched`) it
   * has not read back, in journal order; what is left at the end diverged.
   */
  readonly unvisited: Set<EffectKey>
  /** What `unvisited` holds of each forward step, in journal order: what the step must reach before it ends. */
  readonly visitsByStep: ReadonlyMap<number, ReadonlyArray<Visit>>
  /** The markers' answers the journal holds (`Patched`, §7.13), by their key (`Patches.keyOf`). */
  readonly patched: ReadonlyMap<EffectKey, Marker>
  /** The highest ordinal announced per (phase, step) (`stepOf`): how far the journal shows each step went. */
  readonly furthest: ReadonlyMap<string, number>
  /** Payloads of unkeyed records, by (step, phase, kind), in journal order; compared by `repeats`. */
  readonly positional: ReadonlyMap<string, ReadonlyArray<Journal.Kind>>
  /** The seq of each step's `StepFinished` (forward), which fixes completion order for the unwind. */
  readonly finishedAt: ReadonlyMap<number, number>
  /** Steps with a forward `StepStarted`: at their boundary the run is replaying, not live. */
  readonly started: ReadonlySet<number>
  /** Steps at whose boundary a `RunCancelled` was journaled. */
  readonly cancelledAt: ReadonlyMap<number, Extract<Journal.Kind, { kind: "RunCancelled" }>>
  /** Steps (forward) that journaled a mutating announcement: how an Undeclared step is judged. */
  readonly mutated: ReadonlySet<number>
  /** Refusals by the effect key of the attempt policy refused (§7.12): replayed without asking again. */
  readonly denied: ReadonlyMap<EffectKey, Extract<Journal.Kind, { kind: "PolicyDenied" }>>
  /** The approvals policy asked for, by the effect key they gate: the text of their keyed `Note` (`Approval`). */
  readonly approvals: ReadonlyMap<EffectKey, string>
  /** The keys of the releases the journal holds (`Released`, §7.12): replayed without asking again. */
  readonly released: ReadonlySet<EffectKey>
  /** The latest conclusion, if any. */
  readonly concluded: Option.Option<Extract<Journal.Kind, { kind: "RunSealed" }>>
  /** The latest `BudgetReadmitted` ceilings, if any. */
  readonly raised: Option.Option<Json>
  readonly head: { readonly seq: number; readonly hash: Journal.Record["hash"] }
}

/** A journaled announcement or marker answer a replay must reach: its key, seq and kind. */
export interface Visit {
  readonly key: EffectKey
  readonly seq: number
  readonly kind: string
}

/** A marker's answer as the journal holds it. */
export interface Marker {
  readonly seq: number
  readonly id: string
  readonly value: boolean
}

/** The key of `furthest`: one (phase, step). */
export const stepOf = (phase: Phase, step: StepId | number): string => `${phase}/${step}`

export const slotOf = (phase: Phase, step: StepId | number, ordinal: number): string => `${phase}/${step}/${ordinal}`

export const positionOf = (step: StepId | number, phase: Phase, kind: string): string => `${step}/${phase}/${kind}`

/** What identifies an unkeyed record for the positional rule: its payload without the chain head it was written after. */
export const signature = (kind: Journal.Kind): string => {
  const { chain_head: _ignored, ...rest } = kind as Journal.Kind & { readonly chain_head?: unknown }
  return Canonical.text(rest as unknown as Json)
}

const OUTCOME_KINDS = new Set(["EffectDone", "EffectFailed", "EffectReconciled"])

/** Indexes a run's records; `records` are in seq order. */
export const build = (records: ReadonlyArray<Journal.Record>): History => {
  const byKey = new Map<
    EffectKey,
    { started: Journal.Record; outcome: Option.Option<Journal.Record>; failedFirst: boolean }
  >()
  const order: Array<EffectKey> = []
  // Announcements and markers in journal order: what a replay must reach.
  const visits: Array<EffectKey> = []
  const visitsByStep = new Map<number, Array<Visit>>()
  const visit = (record: Journal.Record, key: EffectKey, kind: string) => {
    visits.push(key)
    if (record.phase !== "forward") return
    const list = visitsByStep.get(record.step) ?? []
    list.push({ key, seq: record.seq, kind })
    visitsByStep.set(record.step, list)
  }
  const patched = new Map<EffectKey, Marker>()
  const positional = new Map<string, Array<Journal.Kind>>()
  const finishedAt = new Map<number, number>()
  const started = new Set<number>()
  const cancelledAt = new Map<number, Extract<Journal.Kind, { kind: "RunCancelled" }>>()
  const mutated = new Set<number>()
  const denied = new Map<EffectKey, Extract<Journal.Kind, { kind: "PolicyDenied" }>>()
  const released = new Set<EffectKey>()
  const approvals = new Map<EffectKey, string>()
  let admitted: History["admitted"] = Option.none()
  let frozen: History["frozen"] = Option.none()
  let concluded: History["concluded"] = Option.none()
  let raised: Option.Option<Json> = Option.none()
  let kase: Option.Option<CaseId> = Option.none()
  for (const record of records) {
    const k = record.kind
    if (Option.isSome(record.case)) kase = record.case
    if (k.kind === "EffectStarted" && Option.isSome(record.effectKey)) {
      byKey.set(record.effectKey.value, { started: record, outcome: Option.none(), failedFirst: false })
      order.push(record.effectKey.value)
      const descriptor = k.descriptor as { readonly kind?: unknown } | null
      visit(record, record.effectKey.value, typeof descriptor?.kind === "string" ? descriptor.kind : "")
      if (k.mutates && record.phase === "forward") mutated.add(record.step)
      continue
    }
    if (k.kind === "Patched" && Option.isSome(record.effectKey)) {
      patched.set(record.effectKey.value, { seq: record.seq, id: k.id, value: k.value })
      visit(record, record.effectKey.value, `Patched{${k.id}, ${k.value}}`)
      continue
    }
    if (k.kind === "PolicyDenied" && Option.isSome(record.effectKey)) {
      denied.set(record.effectKey.value, k)
      continue
    }
    if (k.kind === "Note" && Option.isSome(record.effectKey)) {
      approvals.set(record.effectKey.value, k.text)
      continue
    }
    if (k.kind === "Released" && Option.isSome(record.effectKey)) {
      released.add(record.effectKey.value)
      continue
    }
    if (OUTCOME_KINDS.has(k.kind) && Option.isSome(record.effectKey)) {
      const entry = byKey.get(record.effectKey.value)
      if (entry !== undefined) {
        if (Option.exists(entry.outcome, (o) => o.kind.kind === "EffectFailed")) entry.failedFirst = true
        entry.outcome = Option.some(record)
      }
      continue
    }
    if (k.kind === "RunAdmitted") admitted = Option.some(k)
    if (k.kind === "PlanFrozen") frozen = Option.some(k)
    if (k.kind === "RunSealed") concluded = Option.some(k)
    if (k.kind === "BudgetReadmitted") raised = Option.some(k.limit)
    if (k.kind === "StepStarted" && record.phase === "forward") started.add(record.step)
    if (k.kind === "StepFinished" && record.phase === "forward") finishedAt.set(record.step, record.seq)
    if (k.kind === "RunCancelled") cancelledAt.set(record.step, k)
    const at = positionOf(record.step, record.phase, k.kind)
    const list = positional.get(at) ?? []
    list.push(k)
    positional.set(at, list)
  }
  const slots = new Map<string, Array<Attempt>>()
  const furthest = new Map<string, number>()
  for (const key of order) {
    const entry = byKey.get(key)
    if (entry === undefined) continue
    const started = entry.started
    if (started.kind.kind !== "EffectStarted") continue
    const descriptor = started.kind.descriptor as { readonly kind?: unknown; readonly ordinal?: unknown }
    const ordinal = typeof descriptor?.ordinal === "number" ? descriptor.ordinal : -1
    const slot = slotOf(started.phase, started.step, ordinal)
    const place = stepOf(started.phase, started.step)
    furthest.set(place, Math.max(furthest.get(place) ?? -1, ordinal))
    const list = slots.get(slot) ?? []
    list.push({
      seq: started.seq,
      key,
      kind: typeof descriptor?.kind === "string" ? descriptor.kind : "",
      attempt: started.kind.attempt,
      mutates: started.kind.mutates,
      outcome: entry.outcome,
      failedFirst: entry.failedFirst,
    })
    slots.set(slot, list)
  }
  const last = records[records.length - 1]
  return {
    records,
    admitted,
    frozen,
    case: kase,
    slots,
    unvisited: new Set(visits),
    visitsByStep,
    patched,
    furthest,
    positional,
    finishedAt,
    started,
    cancelledAt,
    mutated,
    denied,
    released,
    approvals,
    concluded,
    raised,
    head: last === undefined ? { seq: 0, hash: ZERO_HASH } : { seq: last.seq, hash: last.hash },
  }
}

const signatures = new WeakMap<Journal.Kind, string>()

/**
 * Whether the journal already holds `kind` as the `n`-th unkeyed record at `at`: the positional
 * rule. The journal's side is canonicalised only when a re-execution offers a record there, once:
 * a woken run replays a few boundaries, while its admission and plan records (the largest) are
 * never offered again.
 */
export const repeats = (history: History, at: string, n: number, kind: Journal.Kind): boolean => {
  const held = history.positional.get(at)?.[n]
  if (held === undefined) return false
  let text = signatures.get(held)
  if (text === undefined) {
    text = signature(held)
    signatures.set(held, text)
  }
  return text === signature(kind)
}

/** The journaled attempt `attempt` of a slot, if the journal reached it. */
export const attemptAt = (history: History, slot: string, attempt: number): Option.Option<Attempt> =>
  Option.fromNullable(history.slots.get(slot)?.find((a) => a.attempt === attempt))
