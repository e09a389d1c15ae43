/**
 * The ClaimError family: why a reviewer's task verb was refused. Store failures in these verbs
 * surface as `Backend` or `Corrupt` themselves, not wrapped.
 */
import { Schema } from "effect"

/**
 * A task id in an error: the hex the stores pass, encoded (in an error body) as `task_<hex>`, the
 * form every view and path of a task uses, so a client can match the error to the task it sent;
 * decoding takes either form.
 */
const TaskField = Schema.transform(Schema.String, Schema.String, {
  strict: true,
  decode: (shown) => (shown.startsWith("task_") ? shown.slice(5) : shown),
  encode: (hex) => `task_${hex}`,
})

export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", { task: TaskField }) {
  override get message(): string {
    return `no task task_${this.task}`
  }
}

/** The task is completed, expired or otherwise no longer waiting for a decision. */
export class NotPending extends Schema.TaggedError<NotPending>()("NotPending", {
  task: TaskField,
  state: Schema.String,
}) {
  override get message(): string {
    return `task task_${this.task} is ${this.state}, no longer pending`
  }
}

export class AlreadyClaimed extends Schema.TaggedError<AlreadyClaimed>()("AlreadyClaimed", {
  task: TaskField,
  holder: Schema.String,
}) {
  override get message(): string {
    return `task task_${this.task} is claimed by ${JSON.stringify(this.holder)}`
  }
}

/** Four eyes: the actor is barred from deciding this task. */
export class Excluded extends Schema.TaggedError<Excluded>()("Excluded", { actor: Schema.String }) {
  override get message(): string {
    return `${JSON.stringify(this.actor)} may not decide this task (four-eyes rule)`
  }
}

export class WrongRole extends Schema.TaggedError<WrongRole>()("WrongRole", { actor: Schema.String }) {
  override get message(): string {
    return `${JSON.stringify(this.actor)} holds none of this task's candidate roles`
  }
}

/** Only the holder may release, and a take-over must name the current holder. */
export class NotHeld extends Schema.TaggedError<NotHeld>()("NotHeld", {
  task: TaskField,
  actor: Schema.String,
}) {
  override get message(): string {
    return `task task_${this.task} is not held by ${JSON.stringify(this.actor)}`
  }
}

export type ClaimError = TaskNotFound | NotPending | AlreadyClaimed | Excluded | WrongRole | NotHeld
