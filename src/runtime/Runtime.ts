/**
 * The Runtime service (§7.4): admits runs, resumes them from their journal, replays them
 * strictly, cancels them and raises their budgets. Every method acts for the `Tenant` in context.
 */
import { Clock, Context, Effect, FiberRef, Layer, Option } from "effect"
import type { Calendar } from "../domain/Calendar.js"
import type { CorrelationKey } from "../domain/CorrelationKey.js"
import type { InboundEvent } from "../domain/Event.js"
import type { CaseId, RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import type * as Run from "../domain/Run.js"
import type { Decision, Task } from "../domain/Task.js"
import type { TaskId } from "../domain/TaskId.js"
import type { Tenant } from "../domain/Tenant.js"
import type { AlreadyClaimed, Excluded, NotPending, TaskNotFound, WrongRole } from "../errors/ClaimError.js"
import type { PolicyMissing } from "../errors/PolicyError.js"
import type { Halted, QuotaUnavailable, SpentOut, TooManyRuns } from "../errors/QuotaError.js"
import type {
  AdmissionConflict,
  InvalidBudget,
  PlanContract,
  ReplayOverrun,
  RunClosed,
  UnknownVersion,
} from "../errors/RuntimeError.js"
import type { Backend, Corrupt, LeaseHeld, NotFound } from "../errors/StoreError.js"
import type * as Stores from "../services/Stores.js"
import * as Engine from "./Engine.js"
import type { Registry, RunDefinition } from "./RunDefinition.js"
import { Crashed, Delivered, type ReplayReport, type RunResult } from "./RunResult.js"
import type { Fake, Options } from "./RuntimeOptions.js"
import * as Turns from "./Turns.js"
import type * as Writer from "./Writer.js"

export { Crashed, Delivered, type Fake, type Options, type ReplayReport, type RunResult }

export type AdmissionError =
  | Halted
  | SpentOut
  | TooManyRuns
  | QuotaUnavailable
  | PlanContract
  | Writer.WriteError
  | LeaseHeld
  | Crashed
  | AdmissionConflict
  | PolicyMissing

export type ResumeError = PlanContract | UnknownVersion | RunClosed | Writer.WriteError | LeaseHeld | Crashed

export interface RunOptions {
  /** An admission key (the `…Once` variants): a second admission with the key fails with `DuplicateAdmission` naming the first run, or with `AdmissionConflict` when its capability or canonical input differ from the first's. */
  readonly admissionKey?: string
}

export class Runtime extends Context.Tag("agentplane/Runtime")<
  Runtime,
  {
    /** Admits and drives a run without a case; fails with the quota's refusal, `PlanContract` for a bare or malformed input or an unregistered definition. */
    readonly run: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      options?: RunOptions,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    /** As `run`, bound to the open case holding any of `keys`, or to a new case of `kind` holding them all. */
    readonly runCorrelated: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      kind: string,
      keys: ReadonlyArray<CorrelationKey>,
      options?: RunOptions,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    /** As `run`, bound to an existing case; a missing or closed case refuses with `PlanContract`. */
    readonly runInCase: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      kase: CaseId,
      options?: RunOptions,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    /** `run` with an admission key (default: the definition's `admissionKey(input)`). */
    readonly runOnce: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      key?: string,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    readonly runCorrelatedOnce: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      kind: string,
      keys: ReadonlyArray<CorrelationKey>,
      key?: string,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    readonly runInCaseOnce: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      kase: CaseId,
      key?: string,
    ) => Effect.Effect<RunResult<O>, AdmissionError, Tenant>
    /** Re-executes a run from its journal (Resume): recorded outcomes are replayed, in-doubt effects recovered by their Recovery, then it goes live; `LeaseHeld` while its owner lives, `RunClosed` once sealed, `UnknownVersion` (touching nothing) when this instance registers another version of its definition. */
    readonly resume: (run: RunId) => Effect.Effect<RunResult<unknown>, ResumeError, Tenant>
    /** Replays a run strictly: nothing is performed and nothing is written, anywhere; past the end of history fails with `ReplayOverrun`. */
    readonly replay: (
      run: RunId,
    ) => Effect.Effect<ReplayReport, PlanContract | ReplayOverrun | Backend | Corrupt | Crashed, Tenant>
    /** `replay` of a run's records handed in (an export's) instead of read from the store: the replay gate's check (§7.13). */
    readonly replayRecords: (
      run: RunId,
      records: ReadonlyArray<Journal.Record>,
    ) => Effect.Effect<ReplayReport, PlanContract | ReplayOverrun | Backend | Corrupt | Crashed, Tenant>
    /** Stores a cancellation request (`true` for the first), honoured at the run's next step boundary; a sealed run refuses with `RunClosed` and stores nothing. */
    readonly cancel: (
      run: RunId,
      actor: string,
      reason: string,
    ) => Effect.Effect<boolean, Backend | Corrupt | RunClosed, Tenant>
    /** Delivers an event (§7.9): buffered and matched in one step; a matched wait is answered and its run resumed in the background (`Resumed`); a live owner keeps the answer for itself (`Buffered`). */
    readonly deliver: (event: InboundEvent) => Effect.Effect<Delivered, Backend | Corrupt, Tenant>
    /** §7.9 deliverTo: delivers to one named run; `Duplicate` for a known (source, id) not claimed by it, `PlanContract` when the run awaits no such event (nothing stored), else as `deliver`. */
    readonly deliverTo: (
      run: RunId,
      event: InboundEvent,
    ) => Effect.Effect<Delivered, Backend | Corrupt | PlanContract, Tenant>
    /** §7.10 pass 5: fires up to `limit` timers due at the clock's now and resumes their runs; `saturated` when the batch was full. */
    readonly fireTimers: (
      limit: number,
    ) => Effect.Effect<
      { readonly fired: number; readonly failed: number; readonly saturated: boolean },
      Backend | Corrupt,
      Tenant
    >
    /** §7.9 redelivery: answers and resumes up to `limit` waiting runs whose event is already claimed for them; returns how many resumed. */
    readonly redeliverClaimed: (limit: number) => Effect.Effect<number, Backend | Corrupt, Tenant>
    /** §7.7 answerTask: delivers `decision` as the task's decision event (one per task: a repeat is `Duplicate`). */
    readonly answerTask: (task: TaskId, decision: Decision) => Effect.Effect<Delivered, Backend | Corrupt, Tenant>
    /** §7.7 decideTask: claims the task for `decision.actor` with `roles`, delivers the decision and completes the task; a repeat of the decision of record answers `Duplicate`, another decision after it is `NotPending`. */
    readonly decideTask: (
      task: TaskId,
      decision: Decision,
      roles: ReadonlyArray<string>,
    ) => Effect.Effect<
      { readonly task: Task; readonly delivered: Delivered },
      TaskNotFound | Excluded | WrongRole | NotPending | AlreadyClaimed | NotFound | Backend | Corrupt,
      Tenant
    >
    /** Waits until every run resumed in the background has stopped (tests, shutdown). */
    readonly idle: Effect.Effect<void>
    /** Raises an unsealed run's budget (`BudgetReadmitted`) and resumes it; a forbidden 0 is `InvalidBudget`. */
    readonly raiseBudget: (
      run: RunId,
      budget: Run.BudgetInput,
    ) => Effect.Effect<RunResult<unknown>, ResumeError | InvalidBudget, Tenant>
  }
>() {}

/**
 * The runtime over the stores, the registry of definitions and a calendar. Its policy is the
 * `PolicyEngine` in context; without one every effect would be denied, so it admits no run and
 * says why (`PolicyMissing`, §7.12): provide a Cedar engine, or `PolicyEngine.allowAll` by choice.
 */
export const layer = (options: Options = {}): Layer.Layer<Runtime, never, Stores.Stores | Registry | Calendar> =>
  Layer.scoped(
    Runtime,
    // Before the engine forks its background fibers, so they and every caller under the layer drain with it.
    Effect.zipRight(
      Effect.locallyScoped(FiberRef.currentScheduler, Turns.scheduler),
      Effect.map(Engine.make(options), (a) =>
        Runtime.of({
          run: (def, input, opts) => a.admit(def, input, { _tag: "None" }, Option.fromNullable(opts?.admissionKey)),
          runCorrelated: (def, input, kind, keys, opts) =>
            a.admit(def, input, { _tag: "Keys", kind, keys }, Option.fromNullable(opts?.admissionKey)),
          runInCase: (def, input, kase, opts) =>
            a.admit(def, input, { _tag: "Case", case: kase }, Option.fromNullable(opts?.admissionKey)),
          runOnce: (def, input, key) =>
            Effect.flatMap(a.onceKey(def, input, key), (k) => a.admit(def, input, { _tag: "None" }, k)),
          runCorrelatedOnce: (def, input, kind, keys, key) =>
            Effect.flatMap(a.onceKey(def, input, key), (k) => a.admit(def, input, { _tag: "Keys", kind, keys }, k)),
          runInCaseOnce: (def, input, kase, key) =>
            Effect.flatMap(a.onceKey(def, input, key), (k) => a.admit(def, input, { _tag: "Case", case: kase }, k)),
          resume: a.resume,
          replay: a.replay,
          replayRecords: a.replayRecords,
          cancel: a.cancel,
          raiseBudget: a.raiseBudget,
          deliver: a.deliver,
          deliverTo: a.deliverTo,
          redeliverClaimed: a.redeliverClaimed,
          answerTask: a.answerTask,
          decideTask: a.decideTask,
          fireTimers: (limit) =>
            Effect.flatMap(Clock.currentTimeMillis, (ms) => a.fireTimers(Math.floor(ms / 1000), limit)),
          idle: a.idle,
        }),
      ),
    ),
  )

export type { Json }
