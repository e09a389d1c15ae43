/**
 * Small builders for the TaskStore battery; seed data always goes through the store itself.
 */
import { randomBytes } from "node:crypto"
import type { Vitest } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type CaseId, generateRunId } from "../../../src/domain/Ids.js"
import { Justification, type Priority, Task, type TaskState } from "../../../src/domain/Task.js"
import { TaskId } from "../../../src/domain/TaskId.js"
import * as Time from "../../../src/domain/Time.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import type { Stores } from "../../support/Backend.js"

/** The `it.effect` the TaskStore battery receives. */
export type Tester = Vitest.Tester<TaskStore | Stores>

export const at = (seconds: number): Time.Timestamp => Time.Timestamp.make(seconds)

export const taskId = (): TaskId => TaskId.make(randomBytes(32).toString("hex"))

export interface Shape {
  readonly case?: CaseId
  readonly kind?: string
  readonly candidateRoles?: ReadonlyArray<string>
  readonly escalateTo?: ReadonlyArray<string>
  readonly excludedActors?: ReadonlyArray<string>
  readonly assignee?: string
  readonly priority?: Priority
  readonly state?: TaskState
  readonly createdAt?: number
  readonly dueAt?: number
}

/** A task record (not yet stored); every field has a plain default. */
export const task = (shape: Shape = {}): Task =>
  new Task({
    id: taskId(),
    run: generateRunId(),
    case: Option.fromNullable(shape.case),
    kind: shape.kind ?? "approve-refund",
    justification: new Justification({
      summary: "refund 40 EUR",
      proposedAction: { refund: { amount: 40, currency: "EUR" } },
      confidence: Option.some(0.75),
      cost: Option.none(),
      evidence: ["ticket 17"],
    }),
    candidateRoles: shape.candidateRoles ?? [],
    assignee: Option.fromNullable(shape.assignee),
    priority: shape.priority ?? "normal",
    state: shape.state ?? "open",
    onExpiry: "deny",
    escalateTo: shape.escalateTo ?? [],
    excludedActors: shape.excludedActors ?? [],
    createdAt: at(shape.createdAt ?? 1_000),
    dueAt: shape.dueAt === undefined ? Option.none() : Option.some(at(shape.dueAt)),
  })

/** Opens a task of `shape` and returns the stored row. */
export const opened = (shape: Shape = {}) => Effect.flatMap(TaskStore, (store) => store.open(task(shape)))

/** The task, which the test expects to exist. */
export const read = (id: TaskId) =>
  Effect.flatMap(TaskStore, (store) => store.task(id)).pipe(Effect.map(Option.getOrThrow))

/** Ids in order, for comparing lists. */
export const ids = (tasks: ReadonlyArray<Task>): ReadonlyArray<TaskId> => tasks.map((t) => t.id)
