/**
 * TaskStore commands (§5.4): three task ids opened with random shapes (any state, assignee,
 * roles), claimed, released, taken over, escalated and decided by three actors holding subsets of
 * three roles. In printed records, `id`, `run` and `case` are indexes into the sequence's pools.
 */
import { randomBytes } from "node:crypto"
import { Effect, FastCheck as fc, Option } from "effect"
import { Justification, OnExpiry, Priority, Task, TaskState } from "../../src/domain/Task.js"
import { TaskId } from "../../src/domain/TaskId.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface TaskLedger extends Model.Ledger {
  readonly pools: Domain.Pools
  readonly tasks: ReadonlyArray<TaskId>
}

const ledger = (): TaskLedger => ({
  ...Model.ledger(),
  pools: Domain.pools(),
  tasks: [taskId(), taskId(), taskId()],
})

// Names with a comma are one name: a comma-joined list would read "ann,bob" as two actors.
const actor = fc.constantFrom("ann", "bob", "ann,bob")
const role = fc.constantFrom("clerk", "lead", "lead,clerk")
const roles = fc.uniqueArray(role, { maxLength: 2 })
const actors = fc.uniqueArray(actor, { maxLength: 2 })
const taskRef = Domain.ref(3)

const taskArgs = fc.record({
  id: taskRef,
  run: Domain.ref(3),
  case: fc.option(Domain.ref(2), { nil: undefined }),
  kind: fc.constantFrom("approve", "review"),
  summary: fc.constantFrom("refund", "waive"),
  confidence: fc.option(fc.constantFrom(0.25, 0.75), { nil: undefined }),
  candidateRoles: roles,
  assignee: fc.option(actor, { nil: undefined }),
  priority: fc.constantFrom(...Priority.literals),
  state: fc.constantFrom(...TaskState.literals),
  onExpiry: fc.constantFrom(...OnExpiry.literals),
  escalateTo: roles,
  excludedActors: actors,
  createdAt: Domain.at,
  dueAt: fc.option(Domain.at, { nil: undefined }),
})
type TaskArgs = typeof taskArgs extends fc.Arbitrary<infer A> ? A : never

const task = (l: TaskLedger, t: TaskArgs) =>
  new Task({
    id: Domain.pick(l.tasks, t.id),
    run: Domain.pick(l.pools.runs, t.run),
    case: t.case === undefined ? Option.none() : Option.some(Domain.pick(l.pools.cases, t.case)),
    kind: t.kind,
    justification: new Justification({
      summary: t.summary,
      proposedAction: { do: t.summary },
      confidence: Option.fromNullable(t.confidence),
      cost: Option.none(),
      evidence: ["ticket"],
    }),
    candidateRoles: t.candidateRoles,
    assignee: Option.fromNullable(t.assignee),
    priority: t.priority,
    state: t.state,
    onExpiry: t.onExpiry,
    escalateTo: t.escalateTo,
    excludedActors: t.excludedActors,
    createdAt: t.createdAt,
    dueAt: Option.fromNullable(t.dueAt),
  })

const command = Model.commandFor<TaskLedger>()
const store = TaskStore

const open = command(taskArgs, (t) => ({
  show: Model.show("open", t),
  run: (l) => Effect.flatMap(store, (s) => s.open(task(l, t))),
}))

const commands = [
  // Opened three times as often as any other call: most verbs need a task to act on.
  ...Model.times(3, open),
  command(taskRef, (i) => ({
    show: Model.show("task", `task#${i}`),
    run: (l) => Effect.flatMap(store, (s) => s.task(Domain.pick(l.tasks, i))),
  })),
  command(fc.tuple(taskRef, actor, roles), ([i, who, held]) => ({
    show: Model.show("claim", `task#${i}`, who, held),
    run: (l) => Effect.flatMap(store, (s) => s.claim(Domain.pick(l.tasks, i), who, held)),
  })),
  command(fc.tuple(taskRef, actor), ([i, who]) => ({
    show: Model.show("release", `task#${i}`, who),
    run: (l) => Effect.flatMap(store, (s) => s.release(Domain.pick(l.tasks, i), who)),
  })),
  command(fc.tuple(taskRef, actor, actor, roles), ([i, from, who, held]) => ({
    show: Model.show("takeOver", `task#${i}`, from, who, held),
    run: (l) => Effect.flatMap(store, (s) => s.takeOver(Domain.pick(l.tasks, i), from, who, held)),
  })),
  command(fc.tuple(taskRef, fc.constantFrom(...TaskState.literals)), ([i, state]) => ({
    show: Model.show("setState", `task#${i}`, state),
    run: (l) => Effect.flatMap(store, (s) => s.setState(Domain.pick(l.tasks, i), state)),
  })),
  command(taskRef, (i) => ({
    show: Model.show("escalate", `task#${i}`),
    run: (l) => Effect.flatMap(store, (s) => s.escalate(Domain.pick(l.tasks, i))),
  })),
  command(fc.tuple(roles, Domain.limit), ([held, limit]) => ({
    show: Model.show("queue", held, limit),
    run: () => Effect.flatMap(store, (s) => s.queue(held, limit)),
  })),
  command(Domain.ref(2), (c) => ({
    show: Model.show("forCase", `case#${c}`),
    run: (l) => Effect.flatMap(store, (s) => s.forCase(Domain.pick(l.pools.cases, c))),
  })),
  command(fc.constant(null), () => ({
    show: Model.show("openCount"),
    run: () => Effect.flatMap(store, (s) => s.openCount()),
  })),
  command(fc.tuple(Domain.at, Domain.limit), ([now, limit]) => ({
    show: Model.show("overdue", now, limit),
    run: () => Effect.flatMap(store, (s) => s.overdue(now, limit)),
  })),
]

export const model: Model.StoreModel<TaskLedger> = { name: "TaskStore", ledger, commands }

// internal

const taskId = (): TaskId => TaskId.make(randomBytes(32).toString("hex"))
