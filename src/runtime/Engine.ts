/**
 * The runtime's entry points: admission in the order of §7.4, resume, strict replay, cancel and
 * raise. Each builds an execution (history, writer, lease) and hands it to the driver; every exit
 * but a test crash releases the lease and the quota slot and accrues spend, best effort.
 */
import { Clock, Duration, Effect, Fiber, FiberSet, Option, Schedule, Schema } from "effect"
import type { Calendar } from "../domain/Calendar.js"
import * as Canonical from "../domain/Canonical.js"
import * as CaseM from "../domain/Case.js"
import { type CorrelationKey, checkCount } from "../domain/CorrelationKey.js"
import type * as EffectKey from "../domain/EffectKey.js"
import type { InboundEvent } from "../domain/Event.js"
import { type CaseId, type Epoch, generateRunId, type RunId, StepId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { type Json, Json as JsonSchema } from "../domain/Json.js"
import * as Quota from "../domain/Quota.js"
import * as Run from "../domain/Run.js"
import type { Decision } from "../domain/Task.js"
import type * as TaskId from "../domain/TaskId.js"
import { Tenant } from "../domain/Tenant.js"
import { Halted, QuotaUnavailable } from "../errors/QuotaError.js"
import { InvalidBudget, PlanContract, ReplayOverrun, RunClosed } from "../errors/RuntimeError.js"
import type { Backend } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { EventStore } from "../services/EventStore.js"
import { JournalStore } from "../services/JournalStore.js"
import { QuotaStore } from "../services/QuotaStore.js"
import type * as Stores from "../services/Stores.js"
import { TimerStore } from "../services/TimerStore.js"
import * as Driver from "./Driver.js"
import * as Execution from "./Execution.js"
import * as History from "./History.js"
import { type Any as AnyDefinition, frozen, type Registered, Registry, type RunDefinition } from "./RunDefinition.js"
import { Crashed, Delivered, type Options, type ReplayReport, type RunResult } from "./Runtime.js"
import * as Waits from "./Waits.js"
import * as Worklist from "./Worklist.js"
import * as Writer from "./Writer.js"

export type Binding =
  | { readonly _tag: "None" }
  | { readonly _tag: "Keys"; readonly kind: string; readonly keys: ReadonlyArray<CorrelationKey> }
  | { readonly _tag: "Case"; readonly case: CaseId }

/** The source a fired timer's answer is recorded with. */
export const TIMER_SOURCE = "agentplane://timer"

const SEALED: ReadonlySet<string> = new Set(["succeeded", "quarantined", "cancelled", "compensated", "swept"])

export const make = (options: Options) =>
  Effect.gen(function* () {
    const services = yield* Effect.context<Stores.Stores | Registry | Calendar>()
    const registry = yield* Registry
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const quotas = yield* QuotaStore
    const owner = options.owner ?? `runtime-${Math.random().toString(36).slice(2, 10)}`
    const ttl = Math.max(1, Math.trunc(options.leaseTtlSecs ?? 30))
    const bundle = options.policyBundle ?? "default"
    const quotaOf = options.quota ?? (() => Quota.unlimited)
    const crash = options.crash ?? (() => false)
    const fakes = options.fakes ?? {}
    const fake = (kind: string) => (Object.hasOwn(fakes, kind) ? fakes[kind] : undefined)
    const timers = yield* TimerStore
    const background = yield* FiberSet.make()
    const wakers = yield* Effect.makeSemaphore(Math.max(1, options.wakeConcurrency ?? 16))
    const nowSecs = Clock.currentTimeMillis.pipe(Effect.map((ms) => Math.floor(ms / 1000)))

    const registered = (def: AnyDefinition) =>
      Effect.flatMap(registry.lookup(def.capability), (entry) =>
        Option.isSome(entry) && entry.value.definition === def
          ? Effect.succeed(entry.value)
          : Effect.fail(new PlanContract({ detail: `run ${def.capability} is not registered with this runtime` })),
      )

    /** Drives an execution under `epoch`, renewing the lease meanwhile, then cleans up as §7.4 says. */
    const drive = (exec: Execution.Execution, epoch: Option.Option<Epoch>, quota: Quota.TenantQuota) =>
      Effect.gen(function* () {
        const renewing = Option.isSome(epoch)
          ? yield* Effect.forkScoped(
              journal
                .renew(exec.run, owner, epoch.value, ttl)
                .pipe(
                  Effect.repeat(Schedule.spaced(Duration.seconds(Math.max(1, Math.floor(ttl / 3))))),
                  Effect.delay(Duration.seconds(Math.max(1, Math.floor(ttl / 3)))),
                  Effect.ignore,
                ),
            )
          : undefined
        const verdict = yield* Driver.execute(exec)
        if (renewing !== undefined) yield* Fiber.interrupt(renewing)
        const stop = verdict.stop
        if (Option.isSome(stop) && stop.value._tag === "Crash") {
          return yield* new Crashed({ run: exec.run, point: stop.value.point })
        }
        if (exec.mode !== "strict" && Option.isSome(epoch)) {
          // Best effort: a failed release only delays the next owner until the lease lapses.
          if (Option.isSome(stop) && exec.writer.durable() === 0 && Option.isSome(exec.case)) {
            yield* Effect.ignore(cases.detachRun(exec.case.value, exec.run))
          }
          yield* Effect.ignore(journal.releaseLease(exec.run, epoch.value))
          yield* Effect.ignore(quotas.release(exec.run))
          if (Quota.boundsSpend(quota) && (exec.liveSpend.tokens > 0 || exec.liveSpend.minorUnits > 0)) {
            const at = yield* nowSecs
            yield* Effect.ignore(quotas.accrue(Quota.periodKey(quota.period, at as never), exec.liveSpend))
          }
        }
        if (Option.isSome(stop)) {
          const s = stop.value
          if (s._tag === "Store") return yield* Effect.fail(s.error)
          // Only Strict replays past its history, and it does not come through here.
          if (s._tag === "Overrun")
            return yield* Effect.dieMessage(`run ${exec.run} overran its history outside Strict`)
        }
        return verdict.status
      }).pipe(Effect.scoped, Effect.provide(services))

    const result = <O>(exec: Execution.Execution, status: Run.RunStatus): RunResult<O> => ({
      run: exec.run,
      case: exec.case,
      status,
      output: status._tag === "Succeeded" ? Option.some(status.output as O) : Option.none(),
    })

    const admit = <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      binding: Binding,
      admissionKey: Option.Option<string>,
    ) =>
      Effect.gen(function* () {
        const entry = yield* registered(def)
        if (
          input === null ||
          typeof input !== "object" ||
          !("label" in input) ||
          typeof input.label !== "string" ||
          input.label.length === 0
        ) {
          return yield* new PlanContract({
            detail: `input of ${def.capability} carries no trust label: pass Run.labeled(value, label)`,
          })
        }
        const inputJson = yield* encodeInput(def, input.value)
        const tenant = yield* Tenant
        const now = yield* nowSecs
        const run = generateRunId()
        const quota = quotaOf(tenant)
        // 1. Quota, fail-closed: any store failure refuses the admission.
        const unavailable = (e: { readonly message: string }) => new QuotaUnavailable({ detail: e.message })
        const halt = yield* Effect.mapError(quotas.halted(), unavailable)
        if (Option.isSome(halt)) return yield* new Halted({ tenant, reason: halt.value })
        if (!Quota.isUnlimited(quota)) {
          if (Quota.boundsSpend(quota)) {
            const period = Quota.periodKey(quota.period, now as never)
            const spent = yield* Effect.mapError(quotas.spent(period), unavailable)
            yield* Quota.checkSpend(tenant, period, quota, spent)
          }
          yield* quotas.reserve(run, quota.maxConcurrentRuns, now as never).pipe(
            Effect.catchTags({
              Backend: (e) => Effect.fail(unavailable(e)),
              Corrupt: (e) => Effect.fail(unavailable(e)),
            }),
          )
        }
        const releaseQuota = Effect.ignore(quotas.release(run))
        // 2. The new run's lease.
        const lease = yield* Effect.tapError(journal.acquire(run, owner, ttl), () => releaseQuota)
        const releaseLease = Effect.ignore(journal.releaseLease(run, lease.epoch))
        // 3. The case.
        const bound = yield* bind(binding, run, now).pipe(
          Effect.tapError(() => Effect.zipRight(releaseLease, releaseQuota)),
        )
        const kase = Option.map(bound, (b) => b.case)
        const records: Array<Journal.Kind> = [
          {
            kind: "RunAdmitted",
            capability: def.capability,
            input: inputJson,
            input_label: input.label,
            policy_bundle: bundle,
            canon: Canonical.CANON_VERSION,
            ...(Option.isSome(admissionKey) ? { idempotency_key: admissionKey.value } : {}),
          },
          {
            kind: "PlanFrozen",
            steps: def.steps.length,
            plan: { ...(frozen(def) as object), admitted_at: now } as Json,
          },
        ]
        if (Option.isSome(bound)) records.push(bound.value.record)
        const history = History.build([])
        const writer = yield* Writer.make({ mode: "live", run, epoch: Option.some(lease.epoch), history }).pipe(
          Effect.provide(services),
        )
        for (const kind of records) {
          writer.stage(
            new Journal.Append({ case: kase, step: StepId.make(0), phase: "forward", effectKey: Option.none(), kind }),
          )
        }
        // A keyed admission is settled by its own commit, so a duplicate learns it before any
        // act (a model call costs money); an unkeyed one rides with the run's first commit.
        if (Option.isSome(admissionKey)) {
          yield* writer
            .flush()
            .pipe(
              Effect.tapError(() =>
                Effect.all([
                  Option.isSome(kase) ? Effect.ignore(cases.detachRun(kase.value, run)) : Effect.void,
                  releaseLease,
                  releaseQuota,
                ]),
              ),
            )
        }
        const exec = Execution.make({
          run,
          mode: "live",
          history,
          writer,
          entry,
          input: input.value,
          case: kase,
          admittedAt: now,
          budget: def.budget,
          crash,
          fake,
        })
        const status = yield* drive(exec, Option.some(lease.epoch), quota)
        return result<O>(exec, status)
      })

    const bind = (binding: Binding, run: RunId, now: number) =>
      Effect.gen(function* () {
        switch (binding._tag) {
          case "None":
            return Option.none()
          case "Keys": {
            if (binding.keys.length === 0) {
              return yield* new PlanContract({ detail: "runCorrelated needs at least one correlation key" })
            }
            const tooMany = checkCount(binding.keys)
            if (tooMany !== undefined) return yield* new PlanContract({ detail: `runCorrelated: ${tooMany}` })
            const c = yield* cases.correlateOrOpen(binding.kind, binding.keys, now as never)
            yield* Effect.catchTag(cases.attachRun(c.case, run), "NotFound", (e) =>
              Effect.fail(new PlanContract({ detail: e.message })),
            )
            return Option.some({
              case: c.case,
              record: {
                kind: "CaseBound",
                case_kind: binding.kind,
                opened: CaseM.isNew(c),
                correlation: binding.keys.map((k) => ({ namespace: k.namespace, value: k.value })),
              } satisfies Journal.Kind,
            })
          }
          case "Case": {
            const found = yield* cases.case(binding.case)
            if (Option.isNone(found)) return yield* new PlanContract({ detail: `case ${binding.case} does not exist` })
            if (found.value.status === "closed") {
              return yield* new PlanContract({
                detail: `case ${binding.case} is closed: a closed case refuses new runs`,
              })
            }
            yield* Effect.catchTag(cases.attachRun(binding.case, run), "NotFound", (e) =>
              Effect.fail(new PlanContract({ detail: e.message })),
            )
            return Option.some({
              case: binding.case,
              record: {
                kind: "CaseBound",
                case_kind: found.value.kind,
                opened: false,
                correlation: found.value.correlation.map((k) => ({ namespace: k.namespace, value: k.value })),
              } satisfies Journal.Kind,
            })
          }
        }
      })

    /** The journal and registered definition of a run, checked for what resume and replay need. */
    const load = (run: RunId) =>
      Effect.gen(function* () {
        const records = yield* journal.read(run, 1)
        const history = History.build(records)
        if (Option.isNone(history.admitted) || Option.isNone(history.frozen)) {
          return yield* new PlanContract({ detail: `run ${run} has no admission in its journal` })
        }
        const admitted = history.admitted.value
        const entry = yield* registry.lookup(admitted.capability)
        if (Option.isNone(entry)) {
          return yield* new PlanContract({ detail: `no definition of ${admitted.capability} is registered here` })
        }
        const def = entry.value.definition
        const input = yield* Effect.mapError(
          Schema.decodeUnknown(def.input)(admitted.input),
          (e) => new PlanContract({ detail: `the journaled input no longer decodes: ${e.message}` }),
        )
        const plan = history.frozen.value.plan as { readonly budget?: Json; readonly admitted_at?: number }
        const budget =
          Run.budgetFromJson(Option.getOrElse(history.raised, () => plan.budget ?? {})) ??
          (yield* new PlanContract({ detail: `run ${run}: its journaled budget does not decode` }))
        return { history, entry: entry.value, input, budget, admittedAt: plan.admitted_at ?? 0, admitted }
      })

    const refuseSealed = (run: RunId, history: History.History) =>
      Option.match(history.concluded, {
        onNone: () => Effect.void,
        onSome: (c) => (SEALED.has(c.outcome) ? Effect.fail(new RunClosed({ run, outcome: c.outcome })) : Effect.void),
      })

    const resumeLoaded = (
      run: RunId,
      loaded: Effect.Effect.Success<ReturnType<typeof load>>,
      epoch: Epoch,
      entry: Registered,
    ) =>
      Effect.gen(function* () {
        const writer = yield* Writer.make({
          mode: "resume",
          run,
          epoch: Option.some(epoch),
          history: loaded.history,
        }).pipe(Effect.provide(services))
        const exec = Execution.make({
          run,
          mode: "resume",
          history: loaded.history,
          writer,
          entry,
          input: loaded.input,
          case: loaded.history.case,
          admittedAt: loaded.admittedAt,
          budget: loaded.budget,
          crash,
          fake,
        })
        const tenant = yield* Tenant
        const status = yield* drive(exec, Option.some(epoch), quotaOf(tenant))
        return result<unknown>(exec, status)
      })

    const resume = (run: RunId, raise: Option.Option<Run.Budget> = Option.none()) =>
      Effect.gen(function* () {
        const loaded = yield* load(run)
        yield* refuseSealed(run, loaded.history)
        if (loaded.admitted.policy_bundle !== bundle) {
          return yield* new PlanContract({
            detail: `run ${run} was admitted under policy bundle ${loaded.admitted.policy_bundle}, this runtime runs ${bundle}`,
          })
        }
        const lease = yield* journal.acquire(run, owner, ttl)
        if (Option.isSome(raise)) {
          const appended = journal.append(run, lease.epoch, [
            new Journal.Append({
              case: loaded.history.case,
              step: StepId.make(0),
              phase: "forward",
              effectKey: Option.none(),
              kind: { kind: "BudgetReadmitted", limit: Run.budgetJson(raise.value) },
            }),
          ])
          yield* Effect.tapError(appended, () => Effect.ignore(journal.releaseLease(run, lease.epoch)))
          return yield* resumeLoaded(run, { ...loaded, budget: raise.value }, lease.epoch, loaded.entry)
        }
        return yield* resumeLoaded(run, loaded, lease.epoch, loaded.entry)
      })

    const replay = (run: RunId) =>
      Effect.gen(function* () {
        const loaded = yield* load(run)
        const writer = yield* Writer.make({ mode: "strict", run, epoch: Option.none(), history: loaded.history }).pipe(
          Effect.provide(services),
        )
        const exec = Execution.make({
          run,
          mode: "strict",
          history: loaded.history,
          writer,
          entry: loaded.entry,
          input: loaded.input,
          case: loaded.history.case,
          admittedAt: loaded.admittedAt,
          budget: loaded.budget,
          crash: () => false,
          fake,
        })
        const verdict = yield* Driver.execute(exec).pipe(Effect.provide(services))
        const journaled = Option.map(loaded.history.concluded, (c) => c.outcome)
        // The execution's own stop, not the verdict's: a quarantine concludes (in Strict, writing
        // nothing), so the verdict carries no stop and the diff would be lost.
        const divergence = Option.flatMap(exec.stop, (s) => (s._tag === "Quarantine" ? s.divergence : Option.none()))
        if (Option.isSome(verdict.stop) && verdict.stop.value._tag === "Overrun") {
          return yield* new ReplayOverrun({ run, seq: verdict.stop.value.seq })
        }
        const reached = outcomeOf(verdict.status, loaded.history)
        const reproduced =
          Option.isNone(divergence) && Option.isNone(verdict.stop) && Option.getOrUndefined(journaled) === reached
        return { run, reproduced, status: verdict.status, divergence, journaled } satisfies ReplayReport
      })

    /**
     * Stores the request; a suspended run is at a step boundary (§7.11), so it is resumed at once,
     * in the background, to honour it at its wait. A run that is executing finds the request at
     * its next boundary; one whose lease is live elsewhere is left to its owner.
     */
    const cancel = (run: RunId, actor: string, reason: string) =>
      Effect.gen(function* () {
        const stored = yield* journal.requestCancel(run, actor, reason)
        const records = yield* Effect.orElseSucceed(journal.read(run, 1), () => [])
        const last = records[records.length - 1]
        if (last?.kind.kind === "RunSuspended") {
          const tenant = yield* Tenant
          yield* FiberSet.run(
            background,
            resume(run).pipe(
              Effect.tapErrorCause((cause) => Effect.logDebug("agentplane.run.cancel_resume_skipped", cause)),
              Effect.ignore,
              wakers.withPermits(1),
              Effect.provideService(Tenant, tenant),
            ),
          )
        }
        return stored
      })

    const raiseBudget = (run: RunId, input: Run.BudgetInput) =>
      Effect.gen(function* () {
        const raised = yield* Effect.try({
          try: () => Run.budget(input),
          catch: (e) => (e instanceof InvalidBudget ? e : new InvalidBudget({ limit: String(e) })),
        })
        return yield* resume(run, Option.some(raised))
      })

    /** The admission key of a `…Once` call: the given one, else the definition's; neither is a plan-contract error. */
    const onceKey = <I, O, R>(def: RunDefinition<I, O, R>, input: Run.Labeled<I>, key: string | undefined) =>
      Option.match(key !== undefined ? Option.some(key) : Option.map(def.admissionKey, (f) => f(input.value)), {
        onNone: () =>
          Effect.fail(
            new PlanContract({
              detail: `${def.capability}: a …Once admission needs a key, given or from admissionKey`,
            }),
          ),
        onSome: (k) => Effect.succeed(Option.some(k)),
      })

    /**
     * Answers a run's wait and resumes it (§7.9 resumeSubscription, §7.10 timers): take the run's
     * lease, retrying a live one with doubling backoff from 25 ms to 1 s; if its owner is still
     * live, leave the answer to it (`Busy`). Otherwise record the answer under the wait's effect
     * unless the journal already has one, drop the wait, and resume the run under the same lease
     * in the background, so the caller (an HTTP delivery, a sweep) is not held by the run's next
     * effects. Background resumes run at most `wakeConcurrency` at a time; on shutdown they are
     * interrupted, their leases lapse, and the sweeper's recovery pass resumes them.
     */
    const wake = (
      run: RunId,
      effect: EffectKey.EffectKey,
      output: Json,
      source: string,
      release: Effect.Effect<void, Backend, Tenant>,
    ) =>
      Effect.gen(function* () {
        const lease = yield* journal.acquire(run, owner, ttl).pipe(
          Effect.retry({
            while: (e) => e._tag === "LeaseHeld",
            schedule: Schedule.exponential(Duration.millis(25)).pipe(
              Schedule.union(Schedule.spaced(Duration.seconds(1))),
              Schedule.intersect(Schedule.recurs(6)),
            ),
          }),
          Effect.map(Option.some),
          Effect.catchTag("LeaseHeld", () => Effect.succeed(Option.none())),
        )
        if (Option.isNone(lease)) return "Busy" as const
        const epoch = lease.value.epoch
        const giveBack = Effect.ignore(journal.releaseLease(run, epoch))
        const records = yield* Effect.tapError(journal.read(run, 1), () => giveBack)
        const started = records.find((r) => r.kind.kind === "EffectStarted" && Option.contains(r.effectKey, effect))
        if (started === undefined) {
          yield* giveBack
          return "NotWaiting" as const
        }
        const answered = records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, effect))
        if (!answered) {
          yield* Effect.tapError(
            journal.append(run, epoch, [Waits.done(started, effect, output, source)]),
            () => giveBack,
          )
        }
        yield* Effect.tapError(release, () => giveBack)
        const tenant = yield* Tenant
        const resumed = Effect.gen(function* () {
          const loaded = yield* load(run)
          yield* refuseSealed(run, loaded.history)
          return yield* resumeLoaded(run, loaded, epoch, loaded.entry)
        }).pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning("agentplane.run.wake_failed", cause)),
          Effect.ignore,
          wakers.withPermits(1),
          Effect.provideService(Tenant, tenant),
        )
        yield* FiberSet.run(background, resumed)
        return "Resumed" as const
      })

    /** §7.10 pass 5: fires up to `limit` due timers, each recorded as `{"fired_at": fireAt}` (the due instant, not the sweep's). */
    const fireTimers = (now: number, limit: number) =>
      Effect.gen(function* () {
        const due = yield* timers.claimDue(now as never, limit)
        let fired = 0
        let failed = 0
        for (const t of due) {
          const woke = yield* Effect.either(
            wake(t.run, t.effect, { fired_at: t.fireAt }, TIMER_SOURCE, timers.disarm(t.run, t.effect)),
          )
          if (woke._tag === "Right" && woke.right === "Resumed") fired += 1
          else failed += 1
        }
        return { fired, failed, saturated: due.length >= limit }
      })

    const events = yield* EventStore
    const deliver = (event: InboundEvent) =>
      Effect.gen(function* () {
        const now = yield* nowSecs
        const accepted = yield* events.accept(event, now as never)
        switch (accepted._tag) {
          case "Duplicate":
            return Delivered.Duplicate()
          case "Buffered":
            return Delivered.Buffered()
          case "Matched": {
            const sub = accepted.subscription
            const woke = yield* wake(
              sub.run,
              sub.effect,
              event.payload,
              event.source,
              events.unsubscribe(sub.run, sub.effect),
            ).pipe(
              Effect.catchAll((e) =>
                // The event is claimed for the run, so a later claimFor or redelivery still finds it.
                Effect.as(Effect.logWarning("agentplane.delivery.resume_failed", e), "Busy" as const),
              ),
            )
            if (woke === "Resumed") return Delivered.Resumed({ run: sub.run })
            // Its owner is live: put the wait back; the owner's claimFor finds the event, claimed for its run.
            yield* events.subscribe(sub, now as never)
            // The owner records its answer before it unsubscribes. If that unsubscribe came before
            // the line above, its answer is in the journal now, and the wait put back is stale; if
            // after, the owner's unsubscribe removes it. Either way no wait outlives its answer.
            const records = yield* journal.read(sub.run, 1)
            if (records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, sub.effect))) {
              yield* events.unsubscribe(sub.run, sub.effect)
            }
            return Delivered.Buffered()
          }
        }
      })

    /** §7.9 redelivery: each waiting run with an event already claimed for it is answered and resumed; returns how many. */
    const redeliverClaimed = (limit: number) =>
      Effect.gen(function* () {
        const now = yield* nowSecs
        let resumed = 0
        for (const sub of yield* events.waiting(limit)) {
          const hit = yield* events.claimFor(sub, now as never)
          if (Option.isNone(hit)) continue
          const e = hit.value.event
          const woke = yield* Effect.either(
            wake(sub.run, sub.effect, e.payload, e.source, events.unsubscribe(sub.run, sub.effect)),
          )
          if (woke._tag === "Right" && woke.right === "Resumed") resumed += 1
        }
        return resumed
      })

    /** §7.7 answerTask: delivers the decision as the task's one decision event. */
    const answerTask = (task: TaskId.TaskId, decision: Decision) => deliver(Worklist.decisionEvent(task, decision))

    return {
      admit,
      onceKey,
      deliver,
      redeliverClaimed,
      answerTask,
      resume: (run: RunId) => resume(run),
      replay,
      cancel,
      raiseBudget,
      wake,
      fireTimers,
      idle: FiberSet.awaitEmpty(background),
    }
  })

/** The conclusion a status stands for, given the journal (a failed run that compensated concludes `compensated`). */
const outcomeOf = (status: Run.RunStatus, history: History.History): Journal.RunOutcome => {
  switch (status._tag) {
    case "Succeeded":
      return "succeeded"
    case "Failed": {
      const compensated = history.records.some(
        (r) => r.kind.kind === "StepCompensated" && r.kind.outcome === "compensated",
      )
      return compensated ? "compensated" : "failed"
    }
    case "Cancelled":
      return "cancelled"
    case "Quarantined":
      return "quarantined"
    case "Exhausted":
      return "exhausted"
    default:
      return "failed"
  }
}

const encodeInput = (def: AnyDefinition, value: unknown) =>
  Effect.flatMap(Schema.encode(def.input)(value), Schema.decodeUnknown(JsonSchema)).pipe(
    Effect.mapError(
      (e) => new PlanContract({ detail: `input of ${def.capability} does not match its schema: ${e.message}` }),
    ),
  )
