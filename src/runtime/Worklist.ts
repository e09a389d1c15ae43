/**
 * Human tasks (§7.7): a step asks a person and waits for the decision; the worklist verbs that
 * deliver one. The task row is opened after the wait's subscription is durable and before the
 * buffer is read, so a decision can never slip between them.
 */
import { type Context, Effect, Either, Option, Schema } from "effect"
import * as Canonical from "../domain/Canonical.js"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import * as EffectKey from "../domain/EffectKey.js"
import { InboundEvent } from "../domain/Event.js"
import { CaseId, RunId } from "../domain/Ids.js"
import type { Json } from "../domain/Json.js"
import * as Run from "../domain/Run.js"
import {
  Decision,
  EXPIRY_ACTOR,
  Justification,
  OnExpiry,
  Priority,
  Task,
  type TaskSpec,
  UNATTENDED_ACTOR,
  validate,
} from "../domain/Task.js"
import * as TaskId from "../domain/TaskId.js"
import { Timestamp } from "../domain/Time.js"
import { TaskStore } from "../services/TaskStore.js"
import * as EffectKind from "./EffectKind.js"
import * as Execution from "./Execution.js"
import * as Waits from "./Waits.js"

/** Where decisions come from. `POST /events` refuses this kind, so only the worklist sends it. */
export const WORKLIST_SOURCE = "agentplane://worklist"

/** The event kind a task's run waits on. */
export const DECIDED_KIND = "agentplane.task.decided"

/** The effect kind of a task's wait (§7.11): args `{task: <hex>}`, first attempt, non-mutating, Retry. */
export const TASK_AWAIT_KIND = "task.await"

/** The effect kind a task's identity is derived from: the id is `derive(run, key)` of this kind over the spec at the step's slot. */
export const TASK_OPEN_KIND = "task.open"

/** The decision event of `task` (`answerTask`): one per task, so a repeat is a duplicate. */
export const decisionEvent = (task: TaskId.TaskId, decision: Decision): InboundEvent =>
  new InboundEvent({
    source: WORKLIST_SOURCE,
    id: `task-decision:${task}`,
    kind: DECIDED_KIND,
    correlation: [CorrelationKey.make("task", task)],
    payload: {
      approved: decision.approved,
      actor: decision.actor,
      reason: decision.reason,
      amendment: decision.amendment,
    },
  })

/**
 * The stored decision event says what `event` says: same kind, same payload (approved, actor,
 * reason, amendment) compared canonically. An erased payload (`null`, once the run journaled
 * the decision) matches nothing: refusing is the safe answer when the decision of record can no
 * longer be read.
 */
export const sameDecision = (stored: InboundEvent, event: InboundEvent): boolean =>
  stored.kind === event.kind && Canonical.text(stored.payload) === Canonical.text(event.payload)

/** The state the decision of record brings its task to: the sweeper's decisions expire it (§7.10), a person's complete it. */
export const fateOf = (stored: InboundEvent): "expired" | "completed" => {
  const actor = (stored.payload as { readonly actor?: unknown } | null)?.actor
  return actor === EXPIRY_ACTOR || actor === UNATTENDED_ACTOR ? "expired" : "completed"
}

/** When and until when a task stands: `createdAt` from the journaled clock, `dueAt` from its obligation. */
export interface Window {
  readonly createdAt: number
  readonly dueAt: Option.Option<number>
}

/**
 * `cx.task(spec)`: opens the task in `beforeSuspend` and waits for its decision. The task id
 * mixes in the run, so two runs of one plan never share a task.
 */
export const task = (
  exec: Execution.Execution,
  at: Execution.At,
  ordinal: number,
  spec: TaskSpec,
  window: Window,
  services: Context.Context<Waits.Services>,
): Effect.Effect<Decision> =>
  Effect.gen(function* () {
    const kase = yield* Waits.needCase(exec, at, "a human task")
    const valid = validate(spec)
    if (Either.isLeft(valid)) {
      return yield* Execution.halt(
        exec,
        Execution.Stop.Contract({ detail: `task ${spec.kind}: ${valid.left.message}` }),
      )
    }
    const id = identity(exec, at, ordinal, spec)
    const opened = row(openArgs(id, exec.run, kase, spec, window))
    const answer = yield* Waits.wait(exec, at, ordinal, services, {
      effectKind: TASK_AWAIT_KIND,
      args: { task: id },
      eventKind: DECIDED_KIND,
      correlation: [CorrelationKey.make("task", id)],
      until: Option.getOrNull(window.dueAt),
      beforeSuspend: Effect.flatMap(TaskStore, (t) => t.open(opened)),
      // §7.11: a cancelled run's open task expires, as a Deny expiry would leave it.
      onCancel: Effect.flatMap(TaskStore, (t) =>
        Effect.catchTag(t.setState(id, "expired"), "NotFound", () => Effect.void),
      ),
    })
    return yield* Schema.decodeUnknown(Decision)(answer.payload).pipe(
      Effect.catchAll((e) =>
        Execution.halt(
          exec,
          Execution.Stop.Quarantine({
            message: `the decision of task ${id} does not decode: ${e.message}`,
            divergence: Option.none(),
          }),
        ),
      ),
    )
  })

/**
 * `cx.openTask(spec)` (§7.7), effect `task.open`: opens the task and answers its id without
 * waiting; the decision, when it comes, is buffered for a later `awaitEvent` on the task's key.
 * Proceed is refused: it lets the run go ahead undecided, and a run that does not wait has
 * nothing to go ahead with.
 */
export const checkOpen = (spec: TaskSpec): Either.Either<TaskSpec, string> => {
  if (spec.onExpiry === "proceed") {
    return Either.left(`openTask(${spec.kind}) refuses on expiry 'proceed': nobody waits to proceed`)
  }
  return Either.mapLeft(validate(spec), (e) => `task ${spec.kind}: ${e.message}`)
}

/** The task row `task.open` writes, and so its arguments: everything the row holds, so a replay that changed any of it is a divergence. */
const OpenArgs = Schema.Struct({
  task: TaskId.TaskId,
  run: RunId,
  case: CaseId,
  kind: Schema.String,
  justification: Justification,
  candidateRoles: Schema.Array(Schema.String),
  priority: Priority,
  onExpiry: OnExpiry,
  escalateTo: Schema.Array(Schema.String),
  excludedActors: Schema.Array(Schema.String),
  createdAt: Timestamp,
  dueAt: Schema.OptionFromNullOr(Timestamp),
})

/** Mutating and Retry: opening keeps the first row under an id, so a repeat after doubt changes nothing. */
export const openKind = EffectKind.make({
  kind: TASK_OPEN_KIND,
  args: OpenArgs,
  success: TaskId.TaskId,
  mutates: true,
  recovery: Run.Recovery.Retry(),
  act: (args) =>
    Effect.flatMap(TaskStore, (tasks) => tasks.open(row(args))).pipe(
      Effect.map((t) => t.id),
      Effect.mapError((e) => new EffectKind.Transient({ message: e.message, disposition: "in_doubt" })),
    ),
})

/** The arguments of `task.open` for the task `id` of this run. */
export const openArgs = (
  id: TaskId.TaskId,
  run: RunId,
  kase: CaseId,
  spec: TaskSpec,
  window: Window,
): typeof OpenArgs.Type => ({
  task: id,
  run,
  case: kase,
  kind: spec.kind,
  justification: spec.justification,
  candidateRoles: spec.candidateRoles,
  priority: spec.priority,
  onExpiry: spec.onExpiry,
  escalateTo: spec.escalateTo,
  excludedActors: spec.excludedActors,
  createdAt: Timestamp.make(window.createdAt),
  dueAt: Option.map(window.dueAt, Timestamp.make),
})

const row = (args: typeof OpenArgs.Type) =>
  new Task({
    id: args.task,
    run: args.run,
    case: Option.some(args.case),
    kind: args.kind,
    justification: args.justification,
    candidateRoles: args.candidateRoles,
    assignee: Option.none(),
    priority: args.priority,
    state: "open",
    onExpiry: args.onExpiry,
    escalateTo: args.escalateTo,
    excludedActors: args.excludedActors,
    createdAt: args.createdAt,
    dueAt: args.dueAt,
  })

/** The id a task at this slot gets: `derive(run, key)` over the spec, stable across replays of the slot. */
export const identity = (exec: Execution.Execution, at: Execution.At, ordinal: number, spec: TaskSpec): TaskId.TaskId =>
  TaskId.derive(
    exec.run,
    EffectKey.derive({
      step: at.step,
      phase: at.phase,
      ordinal,
      attempt: 1,
      kind: TASK_OPEN_KIND,
      args: Schema.encodeSync(specJson)(spec) as Json,
    }),
  )

const specJson = Schema.Struct({
  kind: Schema.String,
  candidateRoles: Schema.Array(Schema.String),
  priority: Schema.String,
  onExpiry: Schema.String,
  escalateTo: Schema.Array(Schema.String),
  excludedActors: Schema.Array(Schema.String),
  allowUnattended: Schema.Boolean,
})
