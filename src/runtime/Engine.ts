/**
 * The runtime's entry points: admission in the order of §7.4, resume, strict replay, cancel and
 * raise, and the wake-ups that resume a waiting run (a fired timer's here; an event's and a task
 * decision's through `Deliveries`, which this engine's `wake` serves). Each builds an execution
 * (history, writer, lease) and hands it to the driver; every exit but a test crash releases the
 * lease and the quota slot and accrues spend, best effort.
 */
import { Clock, Deferred, Duration, Effect, Exit, FiberSet, Option, Schedule, Schema } from "effect"
import type { Calendar } from "../domain/Calendar.js"
import * as Canonical from "../domain/Canonical.js"
import type * as EffectKey from "../domain/EffectKey.js"
import { Epoch, generateRunId, type RunId, StepId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { type Json, Json as JsonSchema } from "../domain/Json.js"
import * as Quota from "../domain/Quota.js"
import * as Run from "../domain/Run.js"
import { Tenant, type TenantId } from "../domain/Tenant.js"
import { PolicyMissing } from "../errors/PolicyError.js"
import { Halted, QuotaUnavailable } from "../errors/QuotaError.js"
import { InvalidBudget, PlanContract, ReplayOverrun, RunClosed } from "../errors/RuntimeError.js"
import type { Backend } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { EventStore } from "../services/EventStore.js"
import { JournalStore } from "../services/JournalStore.js"
import * as PolicyEngineM from "../services/PolicyEngine.js"
import { PolicyEngine } from "../services/PolicyEngine.js"
import { QuotaStore } from "../services/QuotaStore.js"
import type * as Stores from "../services/Stores.js"
import { TaskStore } from "../services/TaskStore.js"
import { TimerStore } from "../services/TimerStore.js"
import * as Admission from "./Admission.js"
import * as Authorise from "./Authorise.js"
import * as Deliveries from "./Deliveries.js"
import * as Driver from "./Driver.js"
import * as Execution from "./Execution.js"
import * as History from "./History.js"
import { type Any as AnyDefinition, frozen, type Registered, Registry, type RunDefinition } from "./RunDefinition.js"
import { Crashed, type ReplayReport, type RunResult } from "./RunResult.js"
import type { Options } from "./RuntimeOptions.js"
import { type Holding, type Staged, stage, type Woke, type Woken } from "./Wakeup.js"
import * as Writer from "./Writer.js"

/** The source a fired timer's answer is recorded with. */
export const TIMER_SOURCE = "agentplane://timer"

/** The `governed_by` identity a principal names: `name@version`, or nothing. */
const governor = (admitted: Extract<Journal.Kind, { kind: "RunAdmitted" }>): string =>
  admitted.governed_by === undefined ? "" : `${admitted.governed_by.name}@${admitted.governed_by.version}`

const SEALED: ReadonlySet<string> = new Set(["succeeded", "quarantined", "cancelled", "compensated", "swept"])

export const make = (options: Options) =>
  Effect.gen(function* () {
    const services = yield* Effect.context<Stores.Stores | Registry | Calendar>()
    const registry = yield* Registry
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const quotas = yield* QuotaStore
    const tasks = yield* TaskStore
    const owner = options.owner ?? `runtime-${Math.random().toString(36).slice(2, 10)}`
    const ttl = Math.max(1, Math.trunc(options.leaseTtlSecs ?? 30))
    // No engine configured is the deny-all engine (§7.12): admission refuses, saying why.
    const engine = Option.getOrElse(yield* Effect.serviceOption(PolicyEngine), () => PolicyEngineM.denyAllEngine)
    const bundle: string = engine.bundle.digest
    const deniesAll = bundle === PolicyEngineM.denyAllEngine.bundle.digest
    const allowsAll = bundle === PolicyEngineM.allowAllEngine.bundle.digest
    const policyOf = (capability: string, tenant: TenantId, admittedBy: string, governedBy = ""): Execution.Policy => ({
      decide: engine.decide,
      principal: Authorise.principal({ capability, governedBy, tenant, admittedBy }),
      allowsAll,
    })
    const quotaOf = options.quota ?? (() => Quota.unlimited)
    const crash = options.crash ?? (() => false)
    const fakes = options.fakes ?? {}
    const fake = (kind: string) => (Object.hasOwn(fakes, kind) ? fakes[kind] : undefined)
    const timers = yield* TimerStore
    const background = yield* FiberSet.make()
    const wakers = yield* Effect.makeSemaphore(Math.max(1, options.wakeConcurrency ?? 16))
    const nowSecs = Clock.currentTimeMillis.pipe(Effect.map((ms) => Math.floor(ms / 1000)))

    /**
     * A run goes on only under the bundle it was admitted under (§7.12): its next effects would
     * otherwise be decided by another policy. Every resume checks it, a wake-up's included.
     */
    const sameBundle = (run: RunId, admitted: Extract<Journal.Kind, { kind: "RunAdmitted" }>) =>
      admitted.policy_bundle === bundle
        ? Effect.void
        : Effect.fail(
            new PlanContract({
              detail: `run ${run} was admitted under policy bundle ${admitted.policy_bundle}, this runtime runs ${bundle} (${engine.bundle.source})`,
            }),
          )

    const registered = (def: AnyDefinition) =>
      Effect.flatMap(registry.lookup(def.capability), (entry) =>
        Option.isSome(entry) && entry.value.definition === def
          ? Effect.succeed(entry.value)
          : Effect.fail(new PlanContract({ detail: `run ${def.capability} is not registered with this runtime` })),
      )

    /**
     * The leases this runtime holds while it works under them, renewed together by one fiber
     * every third of the TTL, so each is renewed within that period of being taken. A fiber per
     * lease, forked and interrupted around every wake-up (one while it queued for a permit, one
     * while it ran), cost a wake-up more CPU than its journal read. An entry leaves when its
     * holder lets go or a renewal fails (the holder learns it at its next write, fenced), as a
     * lease's own fiber used to stop. Each `hold` is an entry of its own.
     *
     * A third in milliseconds, not whole seconds of it: the store keeps expiries in whole seconds
     * (`floor(now) + ttl`), so a 2 s lease renewed each second lapsed whenever a renewal slipped
     * past a second boundary, and a 1 s lease lapsed before its first renewal. Every 667 ms a 2 s
     * lease always has a second left; a 1 s lease can still lapse at a second boundary, so 2 s is
     * the shortest that holds.
     */
    const holdings = new Set<Holding>()
    const hold = (run: RunId, epoch: Epoch, tenant: TenantId, taken?: () => boolean): Holding => {
      const holding = { run, epoch, tenant, ...(taken === undefined ? {} : { taken }) }
      holdings.add(holding)
      return holding
    }
    const unhold = (holding: Holding | undefined) => {
      if (holding !== undefined) holdings.delete(holding)
    }
    const renewHeld = Effect.suspend(() =>
      Effect.forEach(
        // A new run's lease exists once its first commit took it (`Writer` `open`); until then
        // there is nothing to renew, and a renewal would fail and drop the holding.
        [...holdings].filter((h) => h.taken === undefined || h.taken()),
        (h) =>
          journal.renew(h.run, owner, h.epoch, ttl).pipe(
            Effect.provideService(Tenant, h.tenant),
            Effect.catchAllCause(() => Effect.sync(() => unhold(h))),
          ),
        { concurrency: 8, discard: true },
      ),
    )
    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(Math.floor((ttl * 1000) / 3))), renewHeld)),
    )

    /** Drives an execution under `epoch`, renewing the lease meanwhile, then cleans up as §7.4 says. */
    const drive = (
      exec: Execution.Execution,
      epoch: Option.Option<Epoch>,
      quota: Quota.TenantQuota,
      woken?: Woken,
      opening = false,
    ) =>
      Effect.gen(function* () {
        const taken = opening ? () => exec.writer.durable() > 0 : undefined
        const holding = Option.isSome(epoch) ? hold(exec.run, epoch.value, yield* Tenant, taken) : undefined
        const verdict = yield* Driver.execute(exec).pipe(Effect.ensuring(Effect.sync(() => unhold(holding))))
        const stop = verdict.stop
        if (Option.isSome(stop) && stop.value._tag === "Crash") {
          return yield* new Crashed({ run: exec.run, point: stop.value.point })
        }
        // A wake-up's answer rides with the run's first commit. If none came (a store failure
        // first), the lease is left to lapse: the recovery pass resumes the run, whose wait finds
        // its answer again, the timer still armed and the event still claimed for it.
        const answerLost = woken !== undefined && woken.staged && exec.writer.durable() === woken.durableSeq
        woken?.settled?.(!answerLost)
        // Any other store failure of a run with a durable journal leaves the lease to lapse too
        // (issue 16 B): the failed write's outcome is unknown (a wait announced but its
        // subscription lost in COMMIT), and released, the run is found by no pass (recovery
        // walks lapsed leases, redelivery walks waits). Lapsed, it is what a process killed at
        // that write leaves, the case the crash battery recovers: the recovery pass resumes the
        // run under a new epoch (fencing any late write of this one) and the resume repeats the
        // write (subscribe + claimFor, arm, open), each idempotent. The quota slot stays held
        // until that resume ends. With nothing durable there is no run to resume: released as before.
        const storeLost = Option.isSome(stop) && stop.value._tag === "Store" && exec.writer.durable() > 0
        if (exec.mode !== "strict" && Option.isSome(epoch) && !answerLost && !storeLost) {
          // The answer is durable: the timer or the claimed event it came from may go. It went
          // already in the commit that made the answer durable, unless the run made none (its
          // answer was journaled before) or a journal wrapper did not carry the release along.
          if (woken !== undefined && !exec.writer.released()) yield* Effect.ignore(woken.release)
          // Best effort: a failed release only delays the next owner until the lease lapses.
          if (Option.isSome(stop) && exec.writer.durable() === 0 && Option.isSome(exec.case)) {
            yield* Effect.ignore(cases.detachRun(exec.case.value, exec.run))
          }
          // A seal released the lease in its own commit; any other stop releases it here, unless
          // the run's opening commit never came (then there is no lease to release).
          const leased = !opening || exec.writer.durable() > 0
          if (!exec.writer.sealed() && leased) yield* Effect.ignore(journal.releaseLease(exec.run, epoch.value))
          // Admission reserves a slot only under a bounded quota, so under an unlimited one there
          // is none to free (a slot taken while the quota was bounded is left: unlimited ignores it).
          if (!Quota.isUnlimited(quota)) yield* Effect.ignore(quotas.release(exec.run))
          if (Quota.boundsSpend(quota) && (exec.liveSpend.tokens > 0 || exec.liveSpend.minorUnits > 0)) {
            const at = yield* nowSecs
            yield* Effect.ignore(quotas.accrue(Quota.periodKey(quota.period, at as never), exec.liveSpend))
          }
        }
        if (Option.isSome(stop)) {
          const s = stop.value
          if (s._tag === "Store") {
            // A guarded batch's refusal is honoured by the protocol as a cancellation, and only
            // an admission opens a run (`Halted`, `LeaseHeld`): neither reaches here otherwise.
            const error = s.error
            if (error._tag === "CancelPending") return yield* Effect.die(error)
            return yield* Effect.fail(error)
          }
          // Only Strict replays past its history, and it does not come through here.
          if (s._tag === "Overrun")
            return yield* Effect.dieMessage(`run ${exec.run} overran its history outside Strict`)
        }
        return verdict.status
      }).pipe(Effect.provide(services))

    const result = <O>(exec: Execution.Execution, status: Run.RunStatus): RunResult<O> => ({
      run: exec.run,
      case: exec.case,
      status,
      output: status._tag === "Succeeded" ? Option.some(status.output as O) : Option.none(),
    })

    const admit = <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      binding: Admission.Binding,
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
        if (deniesAll) return yield* new PolicyMissing({ detail: PolicyEngineM.NO_POLICY_REASON })
        const inputJson = yield* encodeInput(def, input.value)
        const tenant = yield* Tenant
        const now = yield* nowSecs
        const run = generateRunId()
        const quota = quotaOf(tenant)
        // 1. Quota, fail-closed: any store failure refuses the admission. The halt is checked in
        // the run's opening commit (`Writer` `open`), before anything of it is durable or acts.
        const unavailable = (e: { readonly message: string }) => new QuotaUnavailable({ detail: e.message })
        // A bounded quota reserves a slot and a binding writes the case before that commit, so
        // both read the halt first: a halted tenant gets nothing written.
        if (!Quota.isUnlimited(quota) || binding._tag !== "None") {
          const halt = yield* Effect.mapError(quotas.halted(), unavailable)
          if (Option.isSome(halt)) return yield* new Halted({ tenant, reason: halt.value })
        }
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
        // 2. The new run's lease: epoch 1, taken by its opening commit with the first records.
        const epoch = Epoch.make(1)
        // 3. The case.
        const bound = yield* Admission.bind(cases, binding, run, now).pipe(Effect.tapError(() => releaseQuota))
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
        const writer = yield* Writer.make({
          mode: "live",
          run,
          epoch: Option.some(epoch),
          history,
          journal,
          tenant: yield* Tenant,
          open: { owner, ttlSecs: ttl },
        })
        for (const kind of records) {
          writer.stage(
            Journal.built({ case: kase, step: StepId.make(0), phase: "forward", effectKey: Option.none(), kind }),
          )
        }
        // The admission (its key, if any, and the case binding) rides with the run's first commit,
        // which comes before its first act of any kind (the first announcement's, §7.11): a run is
        // durable, visible and recoverable before it does anything, and a keyed duplicate learns
        // it is one before any act (a model call costs money), from that same commit, which then
        // writes nothing. If the commit fails, nothing of the run is durable and `drive` detaches
        // its case and frees its lease and quota slot.
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
          policy: policyOf(def.capability, tenant, input.label),
        })
        const status = yield* drive(exec, Option.some(epoch), quota, undefined, true).pipe(
          Effect.catchTag("DuplicateAdmission", (duplicate) =>
            Admission.sameAdmission(journal, duplicate, def.capability, inputJson),
          ),
        )
        return result<O>(exec, status)
      })

    /** The journal and registered definition of a run, checked for what resume and replay need. */
    const load = (run: RunId) => Effect.flatMap(journal.read(run, 1), (records) => loadFrom(run, records))

    const loadFrom = (run: RunId, records: ReadonlyArray<Journal.Record>) =>
      Effect.gen(function* () {
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
      woken?: Woken & { readonly answer: Option.Option<Staged> },
    ) =>
      Effect.gen(function* () {
        const answer = woken === undefined ? Option.none<Staged>() : woken.answer
        const tenant = yield* Tenant
        const writer = yield* Writer.make({
          mode: "resume",
          run,
          epoch: Option.some(epoch),
          history: loaded.history,
          ...(Option.isSome(answer) ? { staged: { appends: [answer.value.append], head: answer.value.head } } : {}),
          ...(woken === undefined ? {} : { release: woken.release }),
          ...(woken?.settled === undefined ? {} : { onFirstCommit: () => woken.settled?.(true) }),
          journal,
          tenant,
        })
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
          policy: policyOf(entry.definition.capability, tenant, loaded.admitted.input_label, governor(loaded.admitted)),
        })
        const status = yield* drive(exec, Option.some(epoch), quotaOf(tenant), woken)
        return result<unknown>(exec, status)
      })

    const resume = (run: RunId, raise: Option.Option<Run.Budget> = Option.none()) =>
      Effect.gen(function* () {
        const loaded = yield* load(run)
        yield* refuseSealed(run, loaded.history)
        yield* sameBundle(run, loaded.admitted)
        const lease = yield* journal.acquire(run, owner, ttl)
        if (Option.isSome(raise)) {
          const appended = journal.append(run, lease.epoch, [
            Journal.built({
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
        const writer = yield* Writer.make({
          mode: "strict",
          run,
          epoch: Option.none(),
          history: loaded.history,
          journal,
          tenant: yield* Tenant,
        })
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
          // Strict never decides (it reads decisions from the journal), so it needs no engine.
          policy: {
            ...policyOf(loaded.entry.definition.capability, yield* Tenant, loaded.admitted.input_label),
            decide: () => Effect.dieMessage("a strict replay consulted the policy engine"),
          },
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
        // A sealed run has nothing left to cancel: saying the request was taken would be a lie.
        const before = yield* journal.read(run, 1)
        const concluded = History.build(before).concluded
        if (Option.isSome(concluded) && SEALED.has(concluded.value.outcome)) {
          return yield* new RunClosed({ run, outcome: concluded.value.outcome })
        }
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
     * The caller's half of a wake-up (§7.9 resumeSubscription, §7.10 timers): take the run's
     * lease, retrying a live one with doubling backoff from 25 ms to 1 s; if its owner is still
     * live, leave the answer to it (`Busy`). Otherwise read the journal once and stage the answer
     * under the wait's effect unless the journal already has one. The other half, `resume`,
     * drives the run under the same lease; the caller runs it in the background (at most
     * `wakeConcurrency` at a time), so an HTTP delivery or a sweep is not held by the run's next
     * effects. The answer rides with the run's first commit (its next announcement, suspension or
     * seal) instead of costing one of its own, and so does `release` (disarm the timer, drop the
     * wait and the claimed payload): one transaction, so both are durable or neither is. A sealed
     * run's stale wait is released and `NotWaiting`. On shutdown background resumes are
     * interrupted, their leases lapse, and the sweeper's recovery pass resumes them.
     */
    const wake = (
      run: RunId,
      effect: EffectKey.EffectKey,
      output: Json,
      source: string,
      release: Effect.Effect<void, Backend, Tenant>,
      settled?: (durable: boolean) => void,
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
        if (Option.isNone(lease)) return { _tag: "Busy" } satisfies Woke
        return yield* wakeHeld(run, lease.value.epoch, effect, output, source, release, settled)
      })

    /**
     * `wake` once the run's lease `epoch` is held: the lease is given back on every path but
     * `Resumed`. `settled` learns whether the answer became durable: at once when the journal
     * held it already, else at the resumed run's first commit, or `false` when the run stopped
     * before one (§7.11: a timer counts as fired only once its answer is durable).
     */
    const wakeHeld = (
      run: RunId,
      epoch: Epoch,
      effect: EffectKey.EffectKey,
      output: Json,
      source: string,
      release: Effect.Effect<void, Backend, Tenant>,
      settled?: (durable: boolean) => void,
    ) =>
      Effect.gen(function* () {
        const giveBack = Effect.ignore(journal.releaseLease(run, epoch))
        const prepared = yield* Effect.gen(function* () {
          const records = yield* journal.read(run, 1)
          const started = records.find((r) => r.kind.kind === "EffectStarted" && Option.contains(r.effectKey, effect))
          if (started === undefined) return Option.none()
          const answered = records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, effect))
          const answer = answered ? Option.none() : Option.some(stage(run, records, started, effect, output, source))
          const loaded = yield* loadFrom(run, Option.isSome(answer) ? [...records, answer.value.record] : records)
          yield* sameBundle(run, loaded.admitted)
          return Option.some({ loaded, answer, head: records[records.length - 1]?.seq ?? 0 })
        }).pipe(Effect.tapError(() => giveBack))
        if (Option.isNone(prepared)) {
          yield* giveBack
          return { _tag: "NotWaiting" } satisfies Woke
        }
        const { loaded, answer, head } = prepared.value
        if (Option.exists(loaded.history.concluded, (c) => SEALED.has(c.outcome))) {
          yield* Effect.ignore(release)
          yield* giveBack
          return { _tag: "NotWaiting" } satisfies Woke
        }
        if (Option.isNone(answer)) settled?.(true)
        const tenant = yield* Tenant
        const resume = resumeLoaded(run, loaded, epoch, loaded.entry, {
          staged: Option.isSome(answer),
          durableSeq: head,
          release,
          answer,
          ...(settled === undefined ? {} : { settled }),
        }).pipe(
          // A run sealed first (a normal race) never gets here: the sealed check above, under the
          // lease, answers it `NotWaiting`, so what is logged here is a real failure.
          Effect.tapErrorCause((cause) => Effect.logWarning("agentplane.run.wake_failed", cause)),
          Effect.ignore,
        )
        return { _tag: "Resumed", resume, lease: { run, epoch, tenant } } satisfies Woke
      })

    /**
     * Runs a woken run's resume in the background, under one of the `wakeConcurrency` permits.
     * The lease was taken before the permit, so it is renewed while the resume queues for one
     * (issue 16 C): unrenewed, it lapsed under its live owner behind long runs, and another
     * instance's recovery resumed the run too. The caller (an HTTP delivery) is not held: it
     * returns once the resume is forked, as before. The lease is held until the permit is (or
     * the fiber ends without one); from then on `drive` holds it.
     */
    const inBackground = (woke: { readonly resume: Effect.Effect<void, never, Tenant>; readonly lease: Holding }) =>
      FiberSet.run(
        background,
        Effect.suspend(() => {
          const queued = hold(woke.lease.run, woke.lease.epoch, woke.lease.tenant)
          return wakers
            .withPermits(1)(
              Effect.zipRight(
                Effect.sync(() => unhold(queued)),
                woke.resume,
              ),
            )
            .pipe(Effect.ensuring(Effect.sync(() => unhold(queued))))
        }),
      )

    /**
     * §7.10 pass 5: fires up to `limit` due timers, each recorded as `{"fired_at": fireAt}` (the
     * due instant, not the sweep's). The batch's leases are taken in one statement
     * (`acquireMany`) instead of one transaction per wake-up; a run it does not grant (its owner
     * is live, or a second due timer of the same run) takes `wake`'s own acquire with its
     * backoff. The wake-ups run side by side, each under a permit taken here, so a full
     * background holds the pass; a lease taken for a timer still queued for its permit is renewed
     * meanwhile (issue 16 C), and given back if the pass ends before its wake-up starts. The pass
     * returns once every timer is resumed or refused, not when the runs stop.
     */
    const fireTimers = (now: number, limit: number) =>
      Effect.gen(function* () {
        const due = yield* timers.claimDue(now as never, limit)
        const tenant = yield* Tenant
        const granted = new Map<RunId, Journal.Lease>()
        if (due.length > 0) {
          for (const l of yield* journal.acquireMany(
            due.map((t) => t.run),
            owner,
            ttl,
          ))
            granted.set(l.run, l)
        }
        // Granted leases whose wake-up has not started: each start takes its own out (a single
        // synchronous step, so it and the pass's give-back below never both act on one lease).
        const unstarted = new Map(granted)
        // Held (renewed) while their wake-ups queue for a permit; each start lets its own go.
        const queuedHolds: Array<Holding> = []
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            for (const h of queuedHolds) unhold(h)
            return Effect.forEach(unstarted.values(), (l) => Effect.ignore(journal.releaseLease(l.run, l.epoch)), {
              discard: true,
            })
          }),
        )
        const woken: Array<Deferred.Deferred<boolean>> = []
        for (const t of due) {
          const lease = granted.get(t.run)
          // One wake-up per granted lease; another due timer of the same run acquires for itself.
          granted.delete(t.run)
          const queued = lease === undefined ? undefined : hold(t.run, lease.epoch, tenant)
          if (queued !== undefined) queuedHolds.push(queued)
          // Fired once the answer is durable (§7.11), which the woken run's first commit makes
          // it; a run that stopped before that commit, or a wake-up that never resumed, failed.
          const resumed = yield* Deferred.make<boolean>()
          const settled = (durable: boolean) => {
            Deferred.unsafeDone(resumed, Exit.succeed(durable))
          }
          const one = Effect.gen(function* () {
            unhold(queued)
            const held = lease !== undefined && unstarted.delete(t.run)
            const answer = { fired_at: t.fireAt }
            const disarm = timers.disarm(t.run, t.effect)
            const w = yield* Effect.either(
              held
                ? wakeHeld(t.run, lease.epoch, t.effect, answer, TIMER_SOURCE, disarm, settled)
                : wake(t.run, t.effect, answer, TIMER_SOURCE, disarm, settled),
            )
            if (w._tag === "Right" && w.right._tag === "Resumed") yield* w.right.resume
          }).pipe(
            // No Tenant provided here: the fiber FiberSet.run forks inherits this pass's context.
            Effect.ensuring(Effect.zipRight(Deferred.succeed(resumed, false), wakers.release(1))),
          )
          // Taken and handed over as one step, so an interruption between them leaks no permit; the
          // run itself stays interruptible (its stops interrupt it).
          yield* Effect.uninterruptibleMask((restore) =>
            Effect.zipRight(restore(wakers.take(1)), FiberSet.run(background, Effect.interruptible(one))),
          )
          woken.push(resumed)
        }
        let fired = 0
        for (const r of woken) if (yield* Deferred.await(r)) fired += 1
        return { fired, failed: due.length - fired, saturated: due.length >= limit }
      }).pipe(Effect.scoped)

    const deliveries = Deliveries.make({ journal, events: yield* EventStore, tasks, nowSecs, wake, inBackground })

    return {
      admit,
      onceKey,
      ...deliveries,
      resume: (run: RunId) => resume(run),
      replay,
      cancel,
      raiseBudget,
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
