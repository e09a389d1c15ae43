/**
 * The step context (`cx`, §7.1, §7.5): the only door from a step body to anything that is not
 * deterministic. Every method is an effect with a fixed kind, announced, performed at most once
 * and journaled, so a re-execution reads the journal instead of the world.
 */
import { Context, type Effect, type Option } from "effect"
import type { CaseStatus } from "../domain/Case.js"
import type { Deadline, DeadlineSpec, DeadlineState } from "../domain/Deadline.js"
import type { CaseId, CaseVersion, RunId, StepId } from "../domain/Ids.js"
import type { Json } from "../domain/Json.js"
import type { Phase } from "../domain/Phase.js"
import type { Decision, TaskSpec } from "../domain/Task.js"
import type { TaskId } from "../domain/TaskId.js"
import type { Timestamp } from "../domain/Time.js"
import type { PolicyDenied } from "../errors/PolicyError.js"
import type { CaseConflict, NotFound, ObligationsOutstanding } from "../errors/StoreError.js"
import type { Call, EffectKind } from "./EffectKind.js"
import type * as Waits from "./WaitSpec.js"

/** The answers of `cx.all`, position for position. */
export type Answers<T extends ReadonlyArray<Call<unknown, unknown, unknown>>> = {
  -readonly [K in keyof T]: T[K] extends Call<infer A, unknown, unknown> ? A : never
}
type Rejections<T extends ReadonlyArray<Call<unknown, unknown, unknown>>> =
  T[number] extends Call<unknown, infer E, unknown> ? E : never
type Needs<T extends ReadonlyArray<Call<unknown, unknown, unknown>>> =
  T[number] extends Call<unknown, unknown, infer R> ? R : never

export interface Service {
  readonly run: RunId
  readonly step: StepId
  readonly phase: Phase
  readonly case: Option.Option<CaseId>
  /** Performs one declared effect: decide, announce, act, record; replayed from the journal when it holds the outcome. A declared rejection fails with `E`, a refusal of policy with `PolicyDenied` (§7.12). */
  readonly perform: <A, I, E, R>(kind: EffectKind<A, I, E, R>, args: I) => Effect.Effect<A, E | PolicyDenied, R>
  /** Performs several effects concurrently; ordinals are fixed by position, so replay matches whatever order they finished in. Mutating announcements share one commit. */
  readonly all: <const T extends ReadonlyArray<Call<unknown, unknown, unknown>>>(
    calls: T,
  ) => Effect.Effect<Answers<T>, Rejections<T> | PolicyDenied, Needs<T>>
  /** The journaled clock (effect `clock.now`), whole seconds. */
  readonly now: Effect.Effect<Timestamp>
  /** Journaled randomness (effect `random.next`) in [0, 1). */
  readonly random: Effect.Effect<number>
  /** Effect `case.read_state`: the case's state (untrusted data) and version. */
  readonly caseState: Effect.Effect<{ readonly state: Json; readonly version: CaseVersion }>
  /** Effect `case.write_state` (mutating, Reconcile): writes at `expected` and returns the new version; a stale version is `CaseConflict`: re-read and decide again. */
  readonly putCaseState: (expected: CaseVersion, state: Json) => Effect.Effect<CaseVersion, CaseConflict>
  /** Effect `case.set_status` with `close`'s rules. */
  readonly setCaseStatus: (status: CaseStatus) => Effect.Effect<void, ObligationsOutstanding>
  /** Resolves on the case's calendar at the journaled clock (effect `deadline.resolve`), registers and journals the obligation. */
  readonly deadline: (name: string, spec: DeadlineSpec, warnBeforeSecs?: number) => Effect.Effect<Deadline>
  /** Effect `case.transition_deadline` to Met, learning the prior state. */
  readonly meetDeadline: (name: string) => Effect.Effect<{ readonly from: DeadlineState }, NotFound>
  /** Effect `case.transition_deadline` to Cancelled, learning the prior state. */
  readonly cancelDeadline: (name: string) => Effect.Effect<{ readonly from: DeadlineState }, NotFound>
  /**
   * Declassifies `value` for the rest of the step (§7.12): effects after it no longer count it in
   * their outbound label. Decided by policy (action `agentplane.release`) and journaled as
   * `Released`; a refusal fails with `PolicyDenied`.
   */
  readonly release: (value: unknown, reason: string) => Effect.Effect<void, PolicyDenied>
  /**
   * A versioning marker (§7.13, `Patches`): true when this run takes the changed path here, false
   * when its journal shows it went past this point on the old one. Journaled (`Patched`) and read
   * back on every replay; it takes no ordinal, so adding one moves no journaled effect.
   */
  readonly patched: (id: string) => Effect.Effect<boolean>
  /** Retires marker `id`'s old path (§7.13): records nothing, and quarantines a run whose journal took that path (`Patched{id, false}`). */
  readonly deprecatePatch: (id: string) => Effect.Effect<void>
  /** Journals a note (a `Note` record). */
  readonly note: (text: string) => Effect.Effect<void>
  /** Effect `event.await` (§7.6): the first event of `kind` on any key, found in the buffer or delivered later; the run suspends until then. The payload is untrusted. */
  readonly awaitEvent: (spec: Waits.AwaitSpec) => Effect.Effect<Waits.Received>
  /** Effect `timer.sleep` (§7.8): suspends until `seconds` after the journaled clock; answers the journaled due instant it fired at. */
  readonly sleep: (seconds: number) => Effect.Effect<Waits.Fired>
  /** Effect `timer.sleep` (§7.8): suspends until the instant (whole seconds); answers the journaled due instant it fired at. */
  readonly sleepUntil: (until: number) => Effect.Effect<Waits.Fired>
  /** Asks a person (§7.7): validates the spec, opens the task (due when the obligation its `deadline` names, registered by the run, falls due; an unregistered name is a plan-contract error) and waits for the decision. Needs a case. */
  readonly task: (spec: TaskSpec) => Effect.Effect<Decision>
  /** Effect `task.open` (§7.7): opens the task as `task` does and answers its id without waiting; its decision is buffered for an `awaitEvent` on kind `agentplane.task.decided`, key `("task", id)`. Proceed is refused. Needs a case. */
  readonly openTask: (spec: TaskSpec) => Effect.Effect<TaskId>
}

export class StepCtx extends Context.Tag("agentplane/StepCtx")<StepCtx, Service>() {}
