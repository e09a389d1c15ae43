/**
 * Human tasks: the worklist, four-eyes control, and what an expired decision window decides.
 */
import { Either, Option, Schema } from "effect"
import { InvalidTaskSpec } from "../errors/TaskSpecError.js"
import { CaseId, RunId } from "./Ids.js"
import { Json } from "./Json.js"
import { TaskId } from "./TaskId.js"
import { Timestamp } from "./Time.js"

export const TaskState = Schema.Literal("open", "claimed", "completed", "expired", "escalated")
export type TaskState = typeof TaskState.Type

/** Open, claimed and escalated tasks still wait for a decision; completed and expired ones do not. */
export const isPending = (state: TaskState): boolean => state === "open" || state === "claimed" || state === "escalated"

export const Priority = Schema.Literal("low", "normal", "high", "urgent")
export type Priority = typeof Priority.Type

/** Queue rank, most pressing first: urgent 0, high 1, normal 2, low 3 (the order of `queue`). */
export const rank = (priority: Priority): number => {
  switch (priority) {
    case "urgent":
      return 0
    case "high":
      return 1
    case "normal":
      return 2
    case "low":
      return 3
  }
}

/** What happens when a task's window closes undecided. */
export const OnExpiry = Schema.Literal("deny", "escalate", "proceed")
export type OnExpiry = typeof OnExpiry.Type

/** Why the agent asks: what a reviewer reads before deciding. Stored as JSON text, so absences are `null`. */
export class Justification extends Schema.Class<Justification>("Justification")({
  summary: Schema.String,
  proposedAction: Json,
  confidence: Schema.OptionFromNullOr(Schema.Finite),
  cost: Schema.OptionFromNullOr(Schema.String),
  evidence: Schema.Array(Schema.String),
}) {}

export class Task extends Schema.Class<Task>("Task")({
  id: TaskId,
  run: RunId,
  case: Schema.OptionFromSelf(CaseId),
  kind: Schema.String,
  justification: Justification,
  /** Roles that may decide; empty admits any actor not excluded. */
  candidateRoles: Schema.Array(Schema.String),
  assignee: Schema.OptionFromSelf(Schema.String),
  priority: Priority,
  state: TaskState,
  onExpiry: OnExpiry,
  /** The audience added by escalation. */
  escalateTo: Schema.Array(Schema.String),
  /** Actors barred from deciding (four eyes); escalation never changes them. */
  excludedActors: Schema.Array(Schema.String),
  createdAt: Timestamp,
  dueAt: Schema.OptionFromSelf(Timestamp),
}) {}

/** The actor is not excluded, and the task names no candidate roles or shares one with `roles`. */
export const mayDecide = (task: Task, actor: string, roles: ReadonlyArray<string>): boolean =>
  !task.excludedActors.includes(actor) &&
  (task.candidateRoles.length === 0 || task.candidateRoles.some((role) => roles.includes(role)))

/**
 * State escalated, assignee cleared, and each `escalateTo` role not yet a candidate appended in
 * order. A task open to every role stays open to every role: appending would narrow it.
 */
export const escalate = (task: Task): Task => {
  const candidateRoles = [...task.candidateRoles]
  if (candidateRoles.length > 0) {
    for (const role of task.escalateTo) if (!candidateRoles.includes(role)) candidateRoles.push(role)
  }
  return new Task({ ...task, state: "escalated", assignee: Option.none(), candidateRoles })
}

/** What a run asks for when it opens a task. */
export class TaskSpec extends Schema.Class<TaskSpec>("TaskSpec")({
  kind: Schema.String,
  justification: Justification,
  candidateRoles: Schema.Array(Schema.String),
  priority: Priority,
  /**
   * The name of an obligation the run registered on its case (`cx.deadline`): the task is due when
   * it falls due (§7.7). The run meets or cancels it once decided; the task registers none of its
   * own. None waits without a due instant.
   */
  deadline: Schema.OptionFromSelf(Schema.String),
  onExpiry: OnExpiry,
  escalateTo: Schema.Array(Schema.String),
  excludedActors: Schema.Array(Schema.String),
  /** Consent for Proceed: the run may go ahead with nobody having decided. */
  allowUnattended: Schema.Boolean,
}) {}

/** Proceed requires `allowUnattended`; Escalate requires a non-empty `escalateTo`; `escalateTo` with any other policy is refused. */
export const validate = (spec: TaskSpec): Either.Either<TaskSpec, InvalidTaskSpec> => {
  const refuse = (detail: string) => Either.left(new InvalidTaskSpec({ detail }))
  switch (spec.onExpiry) {
    case "proceed":
      if (!spec.allowUnattended) return refuse("on expiry 'proceed' requires allowUnattended")
      break
    case "escalate":
      if (spec.escalateTo.length === 0) return refuse("on expiry 'escalate' requires a non-empty escalateTo")
      return Either.right(spec)
    case "deny":
      break
  }
  return spec.escalateTo.length === 0
    ? Either.right(spec)
    : refuse(`escalateTo is only meaningful with on expiry 'escalate', not '${spec.onExpiry}'`)
}

/** A reviewer's answer, delivered to the waiting run as the payload of `agentplane.task.decided`. */
export class Decision extends Schema.Class<Decision>("Decision")({
  approved: Schema.Boolean,
  actor: Schema.String,
  reason: Schema.String,
  /** Changes the reviewer made to the proposed action; `null` for none. */
  amendment: Json,
}) {}

/** The actor of a decision the window's closing made under Proceed. */
export const UNATTENDED_ACTOR = "system:unattended"

/** The actor of a rejection the window's closing made under Deny (or Escalate). */
export const EXPIRY_ACTOR = "system:expiry"

/** What a closed window decides: Proceed approves as `system:unattended`; Deny and Escalate reject as `system:expiry`. */
export const expired = (onExpiry: OnExpiry): Decision =>
  onExpiry === "proceed"
    ? new Decision({
        approved: true,
        actor: UNATTENDED_ACTOR,
        reason: "window closed; applied proceed",
        amendment: null,
      })
    : new Decision({
        approved: false,
        actor: EXPIRY_ACTOR,
        reason: `window closed; applied ${onExpiry}`,
        amendment: null,
      })
