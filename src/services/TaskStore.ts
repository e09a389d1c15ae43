/**
 * TaskStore (§5.4): the worklist of human tasks, with four-eyes control settled in the database.
 */
import { Context, type Effect, type Option } from "effect"
import type { CaseId } from "../domain/Ids.js"
import type { Task, TaskState } from "../domain/Task.js"
import type { TaskId } from "../domain/TaskId.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { AlreadyClaimed, Excluded, NotHeld, NotPending, TaskNotFound, WrongRole } from "../errors/ClaimError.js"
import type { Backend, Corrupt, NotFound } from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

export class TaskStore extends Context.Tag("agentplane/TaskStore")<
  TaskStore,
  {
    /** Inserts the task if its id is absent and returns the stored row, so the first task under an id stands. */
    readonly open: (task: Task) => Read<Task>
    /** The task, role and actor names verbatim; none when absent. */
    readonly task: (id: TaskId) => Read<Option.Option<Task>>
    /** Sets state claimed and assignee `actor`, idempotent for the holder, checking `TaskNotFound`, `Excluded`, `WrongRole`, `NotPending`, `AlreadyClaimed` in that order. */
    readonly claim: (
      id: TaskId,
      actor: string,
      roles: ReadonlyArray<string>,
    ) => Read<Task, TaskNotFound | Excluded | WrongRole | NotPending | AlreadyClaimed>
    /** Returns a task claimed by `actor` to state open with no assignee; fails with `TaskNotFound`, or `NotHeld` when `actor` does not hold it. */
    readonly release: (id: TaskId, actor: string) => Read<void, TaskNotFound | NotHeld>
    /** Hands a task claimed by `from` to `actor` after claim's eligibility checks, failing with `NotHeld{actor: from}` when `from` no longer holds it. */
    readonly takeOver: (
      id: TaskId,
      from: string,
      actor: string,
      roles: ReadonlyArray<string>,
    ) => Read<Task, TaskNotFound | Excluded | WrongRole | NotPending | NotHeld>
    /** Writes the state without a transition guard; fails with `NotFound` for a missing task. */
    readonly setState: (id: TaskId, state: TaskState) => Op<void, NotFound>
    /** Applies `Task.escalate` while the task is pending and returns the row as it then stands, a decided task unchanged; fails with `NotFound`. */
    readonly escalate: (id: TaskId) => Read<Task, NotFound>
    /** Up to `limit` open or escalated tasks eligible for `roles` (filtered before the limit), by rank then oldest `createdAt`. */
    readonly queue: (roles: ReadonlyArray<string>, limit: number) => Read<ReadonlyArray<Task>>
    /** Every task of the case in any state, oldest `createdAt` first. */
    readonly forCase: (kase: CaseId) => Read<ReadonlyArray<Task>>
    /** How many tasks are open, claimed or escalated. */
    readonly openCount: () => Read<number>
    /** Up to `limit` open or claimed tasks with `dueAt <= now`, earliest `dueAt` first. */
    readonly overdue: (now: Timestamp, limit: number) => Read<ReadonlyArray<Task>>
  }
>() {}
