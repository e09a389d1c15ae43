/**
 * Fault injection on the TaskStore, BatchStore and TimerStore writes that run in a transaction,
 * PostgreSQL only (the cut is a trigger that terminates the backend; see test/support/Faults.ts):
 * each is one write followed by a read back, and a kill anywhere leaves nothing of it.
 */
import { randomBytes } from "node:crypto"
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { generateBatchId, generateRunId, StepId } from "../../src/domain/Ids.js"
import { Justification, Task } from "../../src/domain/Task.js"
import { TaskId } from "../../src/domain/TaskId.js"
import * as Time from "../../src/domain/Time.js"
import { Timer } from "../../src/domain/Timer.js"
import { BatchStore } from "../../src/services/BatchStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)

const task = () =>
  new Task({
    id: TaskId.make(randomBytes(32).toString("hex")),
    run: generateRunId(),
    case: Option.none(),
    kind: "approve-refund",
    justification: new Justification({
      summary: "refund 40 EUR",
      proposedAction: { refund: 40 },
      confidence: Option.some(0.75),
      cost: Option.none(),
      evidence: ["ticket 17"],
    }),
    candidateRoles: ["reviewer"],
    assignee: Option.none(),
    priority: "high",
    state: "open",
    onExpiry: "escalate",
    escalateTo: ["lead"],
    excludedActors: ["proposer"],
    createdAt: at(1_000),
    dueAt: Option.some(at(5_000)),
  })

const tasksSeen = (t: Task) =>
  Effect.flatMap(TaskStore, (store) => Effect.all([store.task(t.id), store.queue(["reviewer", "lead"], 10)]))

const writeCuts = (table: string, event: "INSERT" | "UPDATE") => [
  Faults.before(table, event),
  Faults.after(table, event),
  Faults.atCommit(table, event),
]

const scenarios = [
  Faults.scenario("TaskStore.open opening a task", writeCuts("tasks", "INSERT"), () => {
    const t = task()
    return {
      setup: Effect.void,
      run: () => Effect.flatMap(TaskStore, (store) => store.open(t)),
      observe: () => tasksSeen(t),
      probe: () => Effect.flatMap(TaskStore, (store) => store.claim(t.id, "alice", ["reviewer"])),
    }
  }),
  Faults.scenario("TaskStore.claim claiming a task", writeCuts("tasks", "UPDATE"), () => {
    const t = task()
    return {
      setup: Effect.flatMap(TaskStore, (store) => store.open(t)),
      run: () => Effect.flatMap(TaskStore, (store) => store.claim(t.id, "alice", ["reviewer"])),
      observe: () => tasksSeen(t),
      probe: () => Effect.flatMap(TaskStore, (store) => store.claim(t.id, "bob", ["reviewer"])),
    }
  }),
  Faults.scenario("TaskStore.escalate escalating a task", writeCuts("tasks", "UPDATE"), () => {
    const t = task()
    return {
      setup: Effect.flatMap(TaskStore, (store) => store.open(t)),
      run: () => Effect.flatMap(TaskStore, (store) => store.escalate(t.id)),
      observe: () => tasksSeen(t),
    }
  }),
  Faults.scenario("BatchStore.open freezing a plan", writeCuts("batches", "INSERT"), () => {
    const batch = generateBatchId()
    return {
      setup: Effect.void,
      run: () => Effect.flatMap(BatchStore, (store) => store.open(batch, "plan-a")),
      observe: () => Effect.flatMap(BatchStore, (store) => store.planDigest(batch)),
      probe: () => Effect.flatMap(BatchStore, (store) => store.open(batch, "plan-b")),
    }
  }),
  Faults.scenario("BatchStore.reserve reserving an item", writeCuts("batch_items", "INSERT"), () => {
    const batch = generateBatchId()
    const run = generateRunId()
    return {
      setup: Effect.flatMap(BatchStore, (store) => store.open(batch, "plan-a")),
      run: () => Effect.flatMap(BatchStore, (store) => store.reserve(batch, "k-1", run)),
      observe: () => Effect.flatMap(BatchStore, (store) => Effect.all([store.items(batch, 10), store.census(batch)])),
      probe: () => Effect.flatMap(BatchStore, (store) => store.reserve(batch, "k-1", generateRunId())),
    }
  }),
  Faults.scenario(
    "TimerStore.claimDue claiming three due timers",
    [
      Faults.before("timers", "UPDATE"),
      Faults.before("timers", "UPDATE", "NEW.fire_at = 101"),
      Faults.after("timers", "UPDATE"),
      Faults.atCommit("timers", "UPDATE"),
    ],
    () => {
      const run = generateRunId()
      const timer = (fireAt: number) =>
        new Timer({
          run,
          case: Option.none(),
          effect: EffectKey.make(randomBytes(32).toString("hex")),
          step: StepId.make(2),
          phase: "forward",
          fireAt: at(fireAt),
        })
      const timers = [timer(100), timer(101), timer(102)]
      return {
        setup: Effect.flatMap(TimerStore, (store) => Effect.forEach(timers, (t) => store.arm(t))),
        run: () => Effect.flatMap(TimerStore, (store) => store.claimDue(at(200), 10)),
        observe: () => Effect.flatMap(TimerStore, (store) => Effect.all([store.pending(10), store.pendingCount()])),
        // Held by the claim for its lease, then takeable again.
        probe: () => Effect.flatMap(TimerStore, (store) => store.claimDue(at(260), 10)),
      }
    },
  ),
]

describe("faults: TaskStore, BatchStore, TimerStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, scenarios)
  })
})
