/**
 * TaskStore in process memory (§5.4), written from the contract as the reference model the SQL
 * layers are compared against and as a public layer for users' tests.
 *
 * Every verb is atomic by construction: it reads the tenant, then does all of its reading,
 * checking and writing in one synchronous body (`Effect.suspend` returning an `Either`), so no
 * other fiber runs between a check and the write it guards. State is plain `Map`s keyed by tenant
 * first. Tasks are copied in and out, so a caller never holds a reference into the store.
 */
import { Effect, Either, Layer, Option, Schema } from "effect"
import type { CaseId } from "../../domain/Ids.js"
import * as Task from "../../domain/Task.js"
import type { TaskId } from "../../domain/TaskId.js"
import { AlreadyClaimed, Excluded, NotHeld, NotPending, TaskNotFound, WrongRole } from "../../errors/ClaimError.js"
import { NotFound } from "../../errors/StoreError.js"
import { TaskStore } from "../../services/TaskStore.js"
import { clampLimit, compareText, perTenantEither } from "./internal/Memory.js"

export const make: Effect.Effect<typeof TaskStore.Service> = Effect.sync(() => {
  /** Runs `f` on the caller's tenant's tasks in one synchronous step. */
  const atomically = perTenantEither(() => new Map<TaskId, Task.Task>())

  /** Copies of the tasks matching `keep`, in `order`, at most `limit`. */
  const list = (
    tasks: Map<TaskId, Task.Task>,
    keep: (task: Task.Task) => boolean,
    order: (a: Task.Task, b: Task.Task) => number,
    limit: number,
  ): Array<Task.Task> => [...tasks.values()].filter(keep).sort(order).slice(0, limit).map(copy)

  return TaskStore.of({
    open: (task) =>
      atomically((tasks) => {
        // The first task under an id stands: ids are derived, so a resumed run re-opens its own.
        const first = tasks.get(task.id)
        if (first !== undefined) return Either.right(copy(first))
        tasks.set(task.id, copy(task))
        return Either.right(copy(task))
      }),

    task: (id) => atomically((tasks) => Either.right(Option.map(Option.fromNullable(tasks.get(id)), copy))),

    claim: (id, actor, roles) =>
      atomically((tasks) => {
        const task = tasks.get(id)
        if (task === undefined) return Either.left(new TaskNotFound({ task: id }))
        const refused = refusal(task, actor, roles)
        if (refused !== undefined) return Either.left(refused)
        // The holder's repeat is an idempotent success; an open task still naming another
        // assignee is that assignee's, as the guarded UPDATE of §5.4 has it.
        const free = (task.state === "open" || task.state === "escalated") && isNoneOr(task.assignee, actor)
        const mine = task.state === "claimed" && isSomeOf(task.assignee, actor)
        if (!free && !mine) {
          return Either.left(new AlreadyClaimed({ task: id, holder: Option.getOrElse(task.assignee, () => "") }))
        }
        const claimed = new Task.Task({ ...task, state: "claimed", assignee: Option.some(actor) })
        tasks.set(id, claimed)
        return Either.right(copy(claimed))
      }),

    release: (id, actor) =>
      atomically((tasks) => {
        const task = tasks.get(id)
        if (task === undefined) return Either.left(new TaskNotFound({ task: id }))
        if (task.state !== "claimed" || !isSomeOf(task.assignee, actor)) {
          return Either.left(new NotHeld({ task: id, actor }))
        }
        // State `open` even for a task escalated before it was claimed: the holder hands it back.
        tasks.set(id, new Task.Task({ ...task, state: "open", assignee: Option.none() }))
        return Either.void
      }),

    takeOver: (id, from, actor, roles) =>
      atomically((tasks) => {
        const task = tasks.get(id)
        if (task === undefined) return Either.left(new TaskNotFound({ task: id }))
        // A take-over is a claim: four eyes does not thin because the last reviewer left.
        const refused = refusal(task, actor, roles)
        if (refused !== undefined) return Either.left(refused)
        if (task.state !== "claimed" || !isSomeOf(task.assignee, from)) {
          return Either.left(new NotHeld({ task: id, actor: from }))
        }
        const taken = new Task.Task({ ...task, state: "claimed", assignee: Option.some(actor) })
        tasks.set(id, taken)
        return Either.right(copy(taken))
      }),

    setState: (id, state) =>
      atomically((tasks) => {
        const task = tasks.get(id)
        if (task === undefined) return Either.left(new NotFound({ what: id }))
        tasks.set(id, new Task.Task({ ...task, state }))
        return Either.void
      }),

    escalate: (id) =>
      atomically((tasks) => {
        const task = tasks.get(id)
        if (task === undefined) return Either.left(new NotFound({ what: id }))
        // The decision that won the race against the sweep stands.
        if (!Task.isPending(task.state)) return Either.right(copy(task))
        const escalated = Task.escalate(task)
        tasks.set(id, escalated)
        return Either.right(copy(escalated))
      }),

    queue: (roles, limit) =>
      atomically((tasks) =>
        Either.right(
          // The role filter runs before the limit, so a page holds up to `limit` eligible tasks.
          list(
            tasks,
            (t) =>
              (t.state === "open" || t.state === "escalated") &&
              (t.candidateRoles.length === 0 || t.candidateRoles.some((role) => roles.includes(role))),
            (a, b) =>
              Task.rank(a.priority) - Task.rank(b.priority) || a.createdAt - b.createdAt || compareText(a.id, b.id),
            clampLimit(limit),
          ),
        ),
      ),

    forCase: (kase) =>
      atomically((tasks) =>
        Either.right(
          list(
            tasks,
            (t) => isSomeOf<CaseId>(t.case, kase),
            (a, b) => a.createdAt - b.createdAt || compareText(a.id, b.id),
            tasks.size,
          ),
        ),
      ),

    openCount: () =>
      atomically((tasks) => Either.right([...tasks.values()].filter((t) => Task.isPending(t.state)).length)),

    overdue: (now, limit) =>
      atomically((tasks) =>
        Either.right(
          // Inclusive: a window closing this second is closed. Escalated tasks are out: their
          // expiry policy already ran.
          list(
            tasks,
            (t) => (t.state === "open" || t.state === "claimed") && Option.isSome(t.dueAt) && t.dueAt.value <= now,
            (a, b) => Option.getOrThrow(a.dueAt) - Option.getOrThrow(b.dueAt) || compareText(a.id, b.id),
            clampLimit(limit),
          ),
        ),
      ),
  })
})

/** A TaskStore in process memory, empty each time the layer is built. */
export const layer: Layer.Layer<TaskStore> = Layer.effect(TaskStore, make)

// internal

/** Claim's eligibility and availability checks, in the contract's order; undefined when none refuses. */
const refusal = (
  task: Task.Task,
  actor: string,
  roles: ReadonlyArray<string>,
): Excluded | WrongRole | NotPending | undefined => {
  // Four eyes first: whoever proposed the action hears "never", not "wait for the holder".
  if (task.excludedActors.includes(actor)) return new Excluded({ actor })
  if (!Task.mayDecide(task, actor, roles)) return new WrongRole({ actor })
  if (!Task.isPending(task.state)) return new NotPending({ task: task.id, state: task.state })
  return undefined
}

const isSomeOf = <A extends string>(option: Option.Option<A>, value: A): boolean =>
  Option.isSome(option) && option.value === value

const isNoneOr = (option: Option.Option<string>, value: string): boolean =>
  Option.isNone(option) || option.value === value

// The justification travels as the JSON text the SQL layers store: a deep copy, and the same
// refusal (a defect) of a justification that has no JSON form.
const JustificationText = Schema.parseJson(Task.Justification)

/** A task sharing nothing mutable with its source. */
const copy = (task: Task.Task): Task.Task =>
  new Task.Task({
    ...task,
    justification: Schema.decodeSync(JustificationText)(Schema.encodeSync(JustificationText)(task.justification)),
    candidateRoles: [...task.candidateRoles],
    escalateTo: [...task.escalateTo],
    excludedActors: [...task.excludedActors],
  })
