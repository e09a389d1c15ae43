/**
 * One execution of a run: the state a Live, Resume or Strict pass shares between the protocol,
 * the steps and the unwind, and the stop signals that end it early.
 *
 * A stop (quarantine, exhaustion, overrun, a store failure, a test crash) is recorded here and
 * the fiber that met it is interrupted, rather than failing with an error a step body could
 * catch and swallow: a step may handle its effects' rejections, never the runtime's verdicts.
 */
import { Data, Effect, Option } from "effect"
import type { Decision } from "../domain/Decision.js"
import type { CaseId, RunId, StepId } from "../domain/Ids.js"
import type { Json } from "../domain/Json.js"
import type { Phase } from "../domain/Phase.js"
import type { PolicyRequest, Principal } from "../domain/PolicyRequest.js"
import * as Quota from "../domain/Quota.js"
import type * as Run from "../domain/Run.js"
import type { PolicyError } from "../errors/PolicyError.js"
import type { NonDeterminism } from "../errors/RuntimeError.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import type * as EffectKind from "./EffectKind.js"
import type * as Flow from "./Flow.js"
import type * as History from "./History.js"
import type { Registered } from "./RunDefinition.js"
import type * as Writer from "./Writer.js"

/**
 * Where a test may crash a run (§7.1, §7.12): after policy allowed an effect (nothing of it
 * durable yet), after the announce is durable, after the act, after the outcome is durable.
 */
export type CrashPoint = "after_decide" | "after_announce" | "after_act" | "after_record"

export type Stop = Data.TaggedEnum<{
  Quarantine: { readonly message: string; readonly divergence: Option.Option<NonDeterminism> }
  Exhaust: { readonly limit: Run.LimitLabel; readonly used: number }
  Overrun: { readonly seq: number }
  Contract: { readonly detail: string }
  Store: { readonly error: Writer.WriteError | Backend | Corrupt }
  Crash: { readonly point: CrashPoint }
  /** A cancellation found at a wait (§7.11): the run stops there, unwinds and seals `cancelled`. */
  Cancel: { readonly actor: string; readonly reason: string }
  /** A wait missed (§7.6, §7.8): the run suspends at `step` until a delivery or a timer wakes it. */
  Suspend: { readonly reason: Run.SuspendReason; readonly step: number }
}>
export const Stop = Data.taggedEnum<Stop>()

export interface Usage {
  steps: number
  effects: number
  tokens: number
  minorUnits: number
  /** Effects and releases policy refused (§7.12), metered against `maxDenials`. */
  denials: number
}

/** Who a run acts as, and the engine its declared effects are put to (§7.12, `Authorise`). */
export interface Policy {
  readonly decide: (request: PolicyRequest) => Effect.Effect<Decision, PolicyError>
  readonly principal: Principal
  /** The engine allows everything (`PolicyEngine.allowAll`): no request need be built. */
  readonly allowsAll: boolean
}

export interface Execution {
  readonly run: RunId
  readonly mode: Writer.Mode
  readonly history: History.History
  readonly writer: Writer.Writer
  readonly entry: Registered
  readonly input: unknown
  readonly case: Option.Option<CaseId>
  /** The instant the run was admitted: the base of the `wallclock` meter. */
  readonly admittedAt: number
  budget: Run.Budget
  readonly usage: Usage
  /** Spend of acts performed by this execution (not replayed ones): what exit accrues to the quota. */
  liveSpend: Quota.Spend
  stop: Option.Option<Stop>
  /** Step outputs by step id. */
  readonly outputs: Map<number, unknown>
  /** Finished forward steps in the order this execution saw them finish. */
  readonly completed: Array<number>
  /** Forward steps that announced a mutating effect in this execution. */
  readonly mutated: Set<number>
  readonly crash: (point: CrashPoint, kind: string, attempt: number) => boolean
  readonly policy: Policy
  /** What each step (by `phase/step`) has received in this execution: its labels (`Authorise.flowOf`). */
  readonly flows: Map<string, Flow.Flow>
  /** The markers this execution answered (`Patches`), by key: a marker asked twice at one place answers once. */
  readonly patches: Map<string, boolean>
  /** The obligations the run registered (`cx.deadline`), in order, replays included: what an approval is due at. */
  readonly obligations: Array<{ readonly name: string; readonly dueAt: number }>
  /** A test's stand-in for the act of a kind, if any. */
  readonly fake: (
    kind: string,
  ) => ((args: unknown, attempt: EffectKind.Attempt) => Effect.Effect<unknown, unknown>) | undefined
}

export const make = (fields: {
  readonly run: RunId
  readonly mode: Writer.Mode
  readonly history: History.History
  readonly writer: Writer.Writer
  readonly entry: Registered
  readonly input: unknown
  readonly case: Option.Option<CaseId>
  readonly admittedAt: number
  readonly budget: Run.Budget
  readonly crash: (point: CrashPoint, kind: string, attempt: number) => boolean
  readonly fake: Execution["fake"]
  readonly policy: Policy
}): Execution => ({
  ...fields,
  flows: new Map(),
  patches: new Map(),
  obligations: [],
  usage: { steps: 0, effects: 0, tokens: 0, minorUnits: 0, denials: 0 },
  liveSpend: Quota.ZERO,
  stop: Option.none(),
  outputs: new Map(),
  completed: [],
  mutated: new Set(),
})

/** Records the first stop and interrupts the calling fiber; later stops keep the first. */
export const halt = (exec: Execution, stop: Stop): Effect.Effect<never> =>
  Effect.suspend(() => {
    // Parallel siblings may stop for different reasons; the worst wins (§7.2), ties keep the first.
    if (Option.isNone(exec.stop) || severity(stop) > severity(exec.stop.value)) exec.stop = Option.some(stop)
    return Effect.interrupt
  })

/**
 * The stop a failed write makes: a guarded batch refused over a cancellation request is the
 * request honoured at the step's boundary (the writer staged `RunCancelled` in the step's place),
 * any other failure is the store's.
 */
export const stopOf = (error: Writer.WriteError | Backend | Corrupt): Stop =>
  error._tag === "CancelPending" ? Stop.Cancel({ actor: error.actor, reason: error.reason }) : Stop.Store({ error })

/** How a stop ranks against a sibling's: the §7.2 order, with aborts (a store failure, a crash, an overrun) above all. */
export const severity = (stop: Stop): number => {
  switch (stop._tag) {
    case "Suspend":
      return 1
    case "Exhaust":
      return 2
    case "Contract":
    case "Cancel":
      return 3
    case "Quarantine":
      return 4
    default:
      return 5
  }
}

/** Where a record is stamped. */
export interface At {
  readonly step: StepId
  readonly phase: Phase
  readonly case: Option.Option<CaseId>
}

/** `(step <index> <name>, <phase>)`: where a quarantine happened, for the message an operator reads. */
export const placeOf = (exec: Execution, at: At): string => {
  const name = (exec.entry.definition.steps[at.step] as { readonly name?: string } | undefined)?.name
  return `(step ${at.step}${name === undefined ? "" : ` ${name}`}, ${at.phase})`
}

export const spendJson = (spend: Quota.Spend): Json => ({ tokens: spend.tokens, minor_units: spend.minorUnits })
