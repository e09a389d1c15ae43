/**
 * A run's policy decisions as `GET /runs/{run}` shows them (§7.12): every refusal on the record,
 * the ones the step handled as well as one that ended the run, every approval the policy asked
 * for with who decided it, and every release. Read from the run's history (`History.build`) of
 * the records `viewRecords` answers, in journal order; an allowed effect is not listed (its
 * announcement is its record).
 *
 * What the journal holds, and so what is shown:
 * - A refusal is its `PolicyDenied` record: action, resource, reason.
 * - An approval is the keyed `Note` `{"approval": roles, "reason": …}` the runtime writes before
 *   opening the task (`Approval.ts`), followed in the same step by the task's wait
 *   (`task.await {task}` at an approval ordinal); the wait's answer is the decision
 *   (`{approved, actor, reason}`, the expiry's actor when the window closed). The action is named
 *   by what followed under the Note's effect key: the effect's announcement (approved) or its
 *   `PolicyDenied` (refused or expired); while the task is open the journal does not name it yet,
 *   and the route reads it from the task (`proposedKind`).
 * - A release is its `Released` record.
 * A refused approval is therefore listed twice, as the approval (with who refused) and as the
 * refusal it became, because both are on the record.
 */
import { Either, Option, Schema } from "effect"
import type { EffectKey } from "../domain/EffectKey.js"
import type * as Journal from "../domain/Journal.js"
import { Phase } from "../domain/Phase.js"
import type * as Task from "../domain/Task.js"
import * as TaskId from "../domain/TaskId.js"
import { APPROVAL_ORDINALS } from "../runtime/Approval.js"
import * as History from "../runtime/History.js"
import { TASK_AWAIT_KIND } from "../runtime/Worklist.js"
import { TaskRef } from "./TaskRef.js"

const At = {
  /** The record's place in the run's journal. */
  seq: Schema.Int,
  step: Schema.NonNegativeInt,
  phase: Phase,
}

/** An effect (or a release) the policy refused: it did not act. */
export const Denied = Schema.TaggedStruct("Denied", {
  ...At,
  action: Schema.String,
  resource: Schema.String,
  reason: Schema.String,
})

/** Who decided an approval task, and why; `approved: false` from the expiry's actor when nobody did in time. */
export const ApprovalDecided = Schema.Struct({ approved: Schema.Boolean, actor: Schema.String, reason: Schema.String })

/** The policy asked `roles` to approve an effect first; `decided` is none while the task is open; `action` is none only when neither the journal nor the task names it. */
export const Approval = Schema.TaggedStruct("Approval", {
  ...At,
  action: Schema.OptionFromNullOr(Schema.String),
  roles: Schema.Array(Schema.String),
  reason: Schema.String,
  task: Schema.OptionFromNullOr(TaskRef),
  decided: Schema.OptionFromNullOr(ApprovalDecided),
})

/** The run declassified a value for the rest of its step, as policy allowed (`agentplane.release`). */
export const Released = Schema.TaggedStruct("Released", {
  ...At,
  releaser: Schema.String,
  release: Schema.String,
  labels: Schema.Array(Schema.String),
  valueDigest: Schema.String,
})

export const PolicyDecision = Schema.Union(Denied, Approval, Released).annotations({ identifier: "PolicyDecision" })
export type PolicyDecision = typeof PolicyDecision.Type

/**
 * The run's policy decisions in journal order, from its records in seq order: all of them, or
 * those `JournalStore.viewRecords` answers, which give the same decisions (the history is indexed
 * by key and slot, never by position, so the records between need not be there).
 */
export const fromRecords = (records: ReadonlyArray<Journal.Record>): ReadonlyArray<PolicyDecision> => {
  const history = History.build(records)
  const waits = approvalWaits(history)
  const announced = new Map<EffectKey, string>()
  for (const attempts of history.slots.values()) for (const a of attempts) announced.set(a.key, a.kind)
  const decisions: Array<PolicyDecision> = []
  for (const record of history.records) {
    const at = { seq: record.seq, step: record.step, phase: record.phase }
    const k = record.kind
    if (k.kind === "PolicyDenied") {
      decisions.push(Denied.make({ ...at, action: k.action, resource: k.resource, reason: k.reason }))
    } else if (k.kind === "Released") {
      const labels = Array.isArray(k.labels) ? k.labels.filter((l): l is string => typeof l === "string") : []
      decisions.push(
        Released.make({ ...at, releaser: k.releaser, release: k.release, labels, valueDigest: k.value_digest }),
      )
    } else if (k.kind === "Note" && Option.isSome(record.effectKey)) {
      const wanted = approvalOf(k.text)
      if (wanted === undefined) continue
      const key = record.effectKey.value
      const wait = waits.take(record)
      decisions.push(
        Approval.make({
          ...at,
          action: Option.orElse(Option.fromNullable(announced.get(key)), () =>
            Option.map(Option.fromNullable(history.denied.get(key)), (d) => d.action),
          ),
          roles: wanted.roles,
          reason: wanted.reason,
          task: Option.fromNullable(wait?.task),
          decided: Option.fromNullable(wait?.decided),
        }),
      )
    }
  }
  return decisions
}

/** The effect kind an approval task proposes (its justification's `proposedAction.kind`, as `Approval.ts` writes it). */
export const proposedKind = (task: Task.Task): Option.Option<string> => {
  const kind = (task.justification.proposedAction as { readonly kind?: unknown } | null)?.kind
  return typeof kind === "string" ? Option.some(kind) : Option.none()
}

// internal

/** The Note's `{"approval": roles, "reason": …}`, as `Approval.ts` writes it; any other Note is not an approval. */
const approvalOf = (text: string): { readonly roles: Array<string>; readonly reason: string } | undefined => {
  try {
    const parsed = JSON.parse(text) as { readonly approval?: unknown; readonly reason?: unknown }
    if (!Array.isArray(parsed?.approval) || typeof parsed.reason !== "string") return undefined
    return { roles: parsed.approval.filter((r): r is string => typeof r === "string"), reason: parsed.reason }
  } catch {
    return undefined
  }
}

interface Wait {
  readonly seq: number
  readonly task: TaskId.TaskId | undefined
  readonly decided: typeof ApprovalDecided.Type | undefined
}

/**
 * The approval tasks' waits, by (phase, step), in journal order. A step waits for one approval at
 * a time (a group or a release cannot wait for a person), so a step's n-th approval Note is
 * answered by its first approval wait after it.
 */
const approvalWaits = (history: History.History) => {
  const byStep = new Map<string, Array<Wait>>()
  for (const [slot, attempts] of history.slots) {
    const [phase, step, ordinal] = slot.split("/")
    if (Number(ordinal) < APPROVAL_ORDINALS) continue
    for (const attempt of attempts) {
      if (attempt.kind !== TASK_AWAIT_KIND) continue
      const list = byStep.get(`${phase}/${step}`) ?? []
      list.push({ seq: attempt.seq, task: taskOf(history, attempt.seq), decided: decidedOf(attempt.outcome) })
      byStep.set(`${phase}/${step}`, list)
    }
  }
  for (const list of byStep.values()) list.sort((a, b) => a.seq - b.seq)
  return {
    /** The first wait of the Note's step after it, taken so the step's next Note gets the next one. */
    take: (note: Journal.Record): Wait | undefined => {
      const list = byStep.get(`${note.phase}/${note.step}`)
      const index = list?.findIndex((w) => w.seq > note.seq) ?? -1
      return index < 0 ? undefined : list?.splice(index, 1)[0]
    },
  }
}

/** The task a wait's announcement names (`{task}` in its descriptor's args). */
const taskOf = (history: History.History, seq: number): TaskId.TaskId | undefined => {
  const started = history.records.find((r) => r.seq === seq)
  const descriptor = started?.kind.kind === "EffectStarted" ? started.kind.descriptor : null
  const task = (descriptor as { readonly args?: { readonly task?: unknown } } | null)?.args?.task
  return typeof task === "string" ? Either.getOrUndefined(TaskId.parse(task)) : undefined
}

/** The decision a wait was answered with, if it was. */
const decidedOf = (outcome: Option.Option<Journal.Record>): typeof ApprovalDecided.Type | undefined => {
  if (Option.isNone(outcome) || outcome.value.kind.kind !== "EffectDone") return undefined
  const answer = outcome.value.kind.output as {
    readonly approved?: unknown
    readonly actor?: unknown
    readonly reason?: unknown
  }
  if (typeof answer?.approved !== "boolean" || typeof answer.actor !== "string") return undefined
  return {
    approved: answer.approved,
    actor: answer.actor,
    reason: typeof answer.reason === "string" ? answer.reason : "",
  }
}
