/**
 * What every flow of the engine (admit, drive, resume, replay, cancel, wake, fire timers) reads:
 * the stores, the registry, this instance's lease owner and TTL, the policy engine and its
 * bundle, the quotas, the test hooks, the background fibers of woken runs and their permits,
 * and the leases being renewed. Built once per runtime; the flows are functions of it, so none
 * reaches another through a callback.
 */
import { Clock, type Context, Effect, FiberSet, Option, type Scope } from "effect"
import type { Calendar } from "../../domain/Calendar.js"
import * as Quota from "../../domain/Quota.js"
import type { TenantId } from "../../domain/Tenant.js"
import { CaseStore } from "../../services/CaseStore.js"
import { EventStore } from "../../services/EventStore.js"
import { JournalStore } from "../../services/JournalStore.js"
import * as PolicyEngineM from "../../services/PolicyEngine.js"
import { PolicyEngine } from "../../services/PolicyEngine.js"
import { QuotaStore } from "../../services/QuotaStore.js"
import type * as Stores from "../../services/Stores.js"
import { TaskStore } from "../../services/TaskStore.js"
import { TimerStore } from "../../services/TimerStore.js"
import * as Authorise from "../Authorise.js"
import type * as Execution from "../Execution.js"
import { Registry } from "../RunDefinition.js"
import type { Options } from "../RuntimeOptions.js"
import * as Holdings from "./Holdings.js"

export interface EngineState {
  readonly services: Context.Context<Stores.Stores | Registry | Calendar>
  readonly registry: Registry["Type"]
  readonly journal: JournalStore["Type"]
  readonly cases: CaseStore["Type"]
  readonly quotas: QuotaStore["Type"]
  readonly tasks: TaskStore["Type"]
  readonly timers: TimerStore["Type"]
  readonly events: EventStore["Type"]
  readonly owner: string
  readonly ttl: number
  readonly policy: PolicyEngine["Type"]
  /** The digest of the bundle this instance decides under; a run goes on only under its own (§7.12). */
  readonly bundle: string
  readonly deniesAll: boolean
  readonly allowsAll: boolean
  readonly quotaOf: (tenant: TenantId) => Quota.TenantQuota
  readonly crash: Execution.Execution["crash"]
  readonly fake: Execution.Execution["fake"]
  /** Woken runs' resumes, interrupted on shutdown (their leases lapse and recovery resumes them). */
  readonly background: FiberSet.FiberSet
  /** `wakeConcurrency` permits: how many woken runs resume at once. */
  readonly wakers: Effect.Semaphore
  readonly holdings: Holdings.Holdings
}

export const make = (
  options: Options,
): Effect.Effect<EngineState, never, Stores.Stores | Registry | Calendar | Scope.Scope> =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const owner = options.owner ?? `runtime-${Math.random().toString(36).slice(2, 10)}`
    const ttl = Math.max(1, Math.trunc(options.leaseTtlSecs ?? 30))
    // No engine configured is the deny-all engine (§7.12): admission refuses, saying why.
    const policy = Option.getOrElse(yield* Effect.serviceOption(PolicyEngine), () => PolicyEngineM.denyAllEngine)
    const bundle: string = policy.bundle.digest
    const fakes = options.fakes ?? {}
    return {
      services: yield* Effect.context<Stores.Stores | Registry | Calendar>(),
      registry: yield* Registry,
      journal,
      cases: yield* CaseStore,
      quotas: yield* QuotaStore,
      tasks: yield* TaskStore,
      timers: yield* TimerStore,
      events: yield* EventStore,
      owner,
      ttl,
      policy,
      bundle,
      deniesAll: bundle === PolicyEngineM.denyAllEngine.bundle.digest,
      allowsAll: bundle === PolicyEngineM.allowAllEngine.bundle.digest,
      quotaOf: options.quota ?? (() => Quota.unlimited),
      crash: options.crash ?? (() => false),
      fake: (kind: string) => (Object.hasOwn(fakes, kind) ? fakes[kind] : undefined),
      background: yield* FiberSet.make(),
      wakers: yield* Effect.makeSemaphore(Math.max(1, options.wakeConcurrency ?? 16)),
      holdings: yield* Holdings.make(journal, owner, ttl),
    }
  })

/** The policy an execution decides under: this instance's engine, for the run's principal. */
export const policyOf = (
  state: EngineState,
  capability: string,
  tenant: TenantId,
  admittedBy: string,
  governedBy = "",
): Execution.Policy => ({
  decide: state.policy.decide,
  principal: Authorise.principal({ capability, governedBy, tenant, admittedBy }),
  allowsAll: state.allowsAll,
})

/** Whole seconds of the runtime's clock: the only place the engine reads it. */
export const nowSecs: Effect.Effect<number> = Clock.currentTimeMillis.pipe(Effect.map((ms) => Math.floor(ms / 1000)))
