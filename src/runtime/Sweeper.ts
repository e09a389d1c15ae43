/**
 * The sweeper (§7.10): one tick for one tenant, six passes in order, idempotent and safe on
 * several instances at once, because every transition it makes is one a repeat leaves as it is
 * and every claim it takes (a lease, a timer claim) is settled by the stores.
 *
 * Evidence first: each transition is preceded by a `Swept` note in one sealed run (outcome
 * `swept`) per tick; a quiet tick writes none. If a note cannot be written the transition still
 * happens and the report says `evidenceLost`.
 */
import { Effect, Option } from "effect"
import { isDue, needsWarning } from "../domain/Deadline.js"
import { generateRunId, type RunId, StepId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import { expired } from "../domain/Task.js"
import { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import { CaseStore } from "../services/CaseStore.js"
import { EventStore } from "../services/EventStore.js"
import { JournalStore } from "../services/JournalStore.js"
import { TaskStore } from "../services/TaskStore.js"
import { TimerStore } from "../services/TimerStore.js"
import * as Observability from "./Observability.js"
import { Runtime } from "./Runtime.js"
import { decisionEvent, fateOf, WORKLIST_SOURCE } from "./Worklist.js"

/** Batch sizes per pass; a full batch marks the pass saturated. */
export const LIMITS = { recovery: 32, deadlines: 512, tasks: 512, redelivery: 128, timers: 128 } as const

export interface SweepReport {
  readonly warned: number
  readonly breached: number
  readonly tasksExpired: number
  readonly tasksEscalated: number
  readonly deadLettered: number
  readonly eventsRedelivered: number
  readonly timersFired: number
  readonly wakeFailures: number
  readonly runsRecovered: number
  readonly recoveryFailures: number
  /** Abandoned runs left alone: admitted under a version of their definition this instance does not register (§7.13). */
  readonly unknownVersions: number
  readonly saturated: {
    readonly timers: boolean
    readonly deadlines: boolean
    readonly tasks: boolean
    readonly recovery: boolean
  }
  /** The evidence run of this tick; none when it was quiet. */
  readonly record: Option.Option<RunId>
  readonly evidenceLost: boolean
  readonly census: {
    readonly openCases: number
    readonly oldestCaseAgeSecs: Option.Option<number>
    readonly dueDeadlines: number
    readonly pendingTimers: number
    readonly openTasks: number
  }
  readonly censusUnavailable: boolean
}

/** Something an operator should look at: a breach, an expiry, a dead letter, a failure, a full pass, lost evidence or no census. */
export const needsAttention = (r: SweepReport): boolean =>
  r.breached > 0 ||
  r.tasksExpired > 0 ||
  r.deadLettered > 0 ||
  r.recoveryFailures > 0 ||
  r.unknownVersions > 0 ||
  r.wakeFailures > 0 ||
  Object.values(r.saturated).some((s) => s) ||
  r.evidenceLost ||
  r.censusUnavailable

/** Nothing happened: every counter 0 and nothing saturated. */
export const isQuiet = (r: SweepReport): boolean =>
  r.warned +
    r.breached +
    r.tasksExpired +
    r.tasksEscalated +
    r.deadLettered +
    r.eventsRedelivered +
    r.timersFired +
    r.wakeFailures +
    r.runsRecovered +
    r.recoveryFailures +
    r.unknownVersions ===
    0 && !Object.values(r.saturated).some((s) => s)

/** The grace an unclaimed event gets before it is dead-lettered, by default. */
export const DEFAULT_EVENT_GRACE_SECS = 86_400

/** One tick for the tenant in context at `now`. */
export const sweep = (now: Timestamp, eventGraceSecs: number = DEFAULT_EVENT_GRACE_SECS) =>
  Effect.gen(function* () {
    const runtime = yield* Runtime
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const tasks = yield* TaskStore
    const events = yield* EventStore
    const timers = yield* TimerStore
    const tenant = yield* Tenant
    const evidence = yield* makeEvidence(journal, tenant)

    // 1. Recovery: runs whose owner died. Resume acquires (bumping the epoch), fencing the dead owner.
    let runsRecovered = 0
    let recoveryFailures = 0
    let unknownVersions = 0
    const abandoned = yield* Effect.orElseSucceed(journal.abandonedRuns(LIMITS.recovery), () => [])
    const emptyJournal = (run: RunId) =>
      Effect.map(Effect.either(journal.read(run, 1)), (read) => read._tag === "Right" && read.right.length === 0)
    for (const run of abandoned) {
      yield* evidence.note(run, "run_recovered", { run })
      const resumed = yield* Effect.either(runtime.resume(run))
      yield* resumed._tag === "Right"
        ? Observability.logRecovered(run, "resumed", resumed.right.status._tag)
        : Observability.logRecovered(run, "failed", resumed.left.message)
      if (resumed._tag === "Right") runsRecovered += 1
      // Left alone, its lease lapsed, for an instance that registers its version to recover.
      else if (resumed.left._tag === "UnknownVersion") unknownVersions += 1
      else if (resumed.left._tag === "RunClosed" || (yield* emptyJournal(run))) {
        // A lease over an empty journal (left by a store written before admissions took their
        // lease in their opening commit, or by any other acquire of a run never written), or over a
        // run sealed just before its owner died, is just released. Any other refusal (a
        // definition this process does not register) leaves the lease lapsed, so a sweep that
        // can resume the run still finds it: released, no pass would.
        const lease = yield* Effect.either(journal.acquire(run, "sweeper", 1))
        if (lease._tag === "Right") yield* Effect.ignore(journal.releaseLease(run, lease.right.epoch))
        else recoveryFailures += 1
      } else recoveryFailures += 1
    }

    // 2. Deadlines. The state write that removes a deadline from `due` comes last, so a crash
    // part-way repeats the pass instead of losing the breach.
    let warned = 0
    let breached = 0
    const due = yield* Effect.orElseSucceed(cases.due(now, LIMITS.deadlines), () => [])
    for (const d of due) {
      if (isDue(d, now)) {
        yield* evidence.note(`${d.case}/${d.name}`, "deadline_breached", {
          message: `'${d.name}' was due ${new Date(d.resolvedAt * 1000).toISOString()} and was not met`,
        })
        yield* evidence.note(d.case, "case_escalated", { deadline: d.name })
        yield* Effect.ignore(cases.setStatus(d.case, "escalated"))
        const set = yield* Effect.either(cases.setDeadlineState(d.case, d.name, "breached"))
        if (set._tag === "Right") breached += 1
      } else if (needsWarning(d, now)) {
        yield* evidence.note(`${d.case}/${d.name}`, "deadline_warned", { warn_at: Option.getOrNull(d.warnAt) })
        const set = yield* Effect.either(cases.setDeadlineState(d.case, d.name, "warned"))
        if (set._tag === "Right") warned += 1
      }
    }

    // 3. Tasks past their window.
    let tasksExpired = 0
    let tasksEscalated = 0
    const overdue = yield* Effect.orElseSucceed(tasks.overdue(now, LIMITS.tasks), () => [])
    for (const t of overdue) {
      if (t.onExpiry === "escalate") {
        yield* evidence.note(`task_${t.id}`, "task_escalated", { to: [...t.escalateTo] })
        if ((yield* Effect.either(tasks.escalate(t.id)))._tag === "Right") tasksEscalated += 1
      } else {
        yield* evidence.note(`task_${t.id}`, "task_expired", { message: `window closed; applied ${t.onExpiry}` })
        const answered = yield* Effect.either(runtime.answerTask(t.id, expired(t.onExpiry)))
        // A duplicate means a decision of record exists: a person's (a decide cut off before it
        // completed the task) completes it; the window closing does not overrule it.
        const fate =
          answered._tag === "Right" && answered.right._tag === "Duplicate"
            ? yield* events.accepted(WORKLIST_SOURCE, decisionEvent(t.id, expired(t.onExpiry)).id).pipe(
                Effect.map(Option.match({ onNone: () => "expired" as const, onSome: (s) => fateOf(s.event) })),
                Effect.orElseSucceed(() => "expired" as const),
              )
            : ("expired" as const)
        if (answered._tag === "Right" && (yield* Effect.either(tasks.setState(t.id, fate)))._tag === "Right") {
          if (fate === "expired") tasksExpired += 1
        }
      }
    }

    // 4. Events: waits whose event is already claimed, then the unclaimed past their grace.
    const eventsRedelivered = yield* Effect.orElseSucceed(runtime.redeliverClaimed(LIMITS.redelivery), () => 0)
    const deadLettered = yield* Effect.orElseSucceed(
      events.sweepUnclaimed((now - eventGraceSecs) as Timestamp, "no run claimed this event within the grace window"),
      () => 0,
    )

    // 5. Timers.
    const fired = yield* Effect.orElseSucceed(runtime.fireTimers(LIMITS.timers), () => ({
      fired: 0,
      failed: 0,
      saturated: false,
    }))

    // 6. Census.
    const census = yield* Effect.either(
      Effect.all({ cases: cases.census(now), timers: timers.pendingCount(), tasks: tasks.openCount() }),
    )
    const record = yield* evidence.close
    return {
      warned,
      breached,
      tasksExpired,
      tasksEscalated,
      deadLettered,
      eventsRedelivered,
      timersFired: fired.fired,
      wakeFailures: fired.failed,
      runsRecovered,
      recoveryFailures,
      unknownVersions,
      saturated: {
        timers: fired.fired + fired.failed >= LIMITS.timers,
        deadlines: due.length >= LIMITS.deadlines,
        tasks: overdue.length >= LIMITS.tasks,
        recovery: abandoned.length >= LIMITS.recovery,
      },
      record,
      evidenceLost: evidence.lost(),
      census:
        census._tag === "Right"
          ? {
              openCases: census.right.cases.open,
              oldestCaseAgeSecs: census.right.cases.oldestAgeSecs,
              dueDeadlines: census.right.cases.due,
              pendingTimers: census.right.timers,
              openTasks: census.right.tasks,
            }
          : { openCases: 0, oldestCaseAgeSecs: Option.none(), dueDeadlines: 0, pendingTimers: 0, openTasks: 0 },
      censusUnavailable: census._tag === "Left",
    } satisfies SweepReport
  })

// internal

/** The tick's evidence run, opened on its first note. */
const makeEvidence = (journal: JournalStore["Type"], tenant: Tenant["Type"]) =>
  Effect.sync(() => {
    let opened: Option.Option<{ readonly run: RunId; readonly epoch: Journal.Lease["epoch"] }> = Option.none()
    let lost = false
    const write = <A, E>(effect: Effect.Effect<A, E, Tenant>) => Effect.provideService(effect, Tenant, tenant)
    const note = (subject: string, action: Journal.SweepAction, detail: Json) =>
      Effect.gen(function* () {
        let current = Option.getOrUndefined(opened)
        if (current === undefined) {
          const run = generateRunId()
          const lease = yield* write(journal.acquire(run, "sweeper", 60))
          current = { run, epoch: lease.epoch }
          opened = Option.some(current)
        }
        const { run, epoch } = current
        yield* write(
          journal.append(run, epoch, [
            Journal.built({
              case: Option.none(),
              step: StepId.make(0),
              phase: "forward",
              effectKey: Option.none(),
              kind: { kind: "Swept", subject, action, detail },
            }),
          ]),
        )
      }).pipe(
        Effect.catchAll(() =>
          Effect.sync(() => {
            lost = true
          }),
        ),
      )
    const close = Effect.gen(function* () {
      if (Option.isNone(opened)) return Option.none<RunId>()
      const { run, epoch } = opened.value
      const sealed = yield* Effect.either(write(journal.seal(run, epoch, "swept")))
      if (sealed._tag === "Left") lost = true
      yield* Effect.ignore(write(journal.releaseLease(run, epoch)))
      return Option.some(run)
    })
    return { note, close, lost: () => lost }
  })
