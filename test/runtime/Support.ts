/**
 * What the runtime battery shares: a runtime over a backend's stores, built fresh per call so a
 * test can play "a fresh process" by building a second one over the same database, counters kept
 * outside the journal, and a few effect kinds whose acts count themselves.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import * as Calendar from "../../src/domain/Calendar.js"
import type * as Deadline from "../../src/domain/Deadline.js"
import * as EffectKey from "../../src/domain/EffectKey.js"
import type { RunId } from "../../src/domain/Ids.js"
import type * as Journal from "../../src/domain/Journal.js"
import type { Json } from "../../src/domain/Json.js"
import type { Spend } from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { Justification, type OnExpiry, TaskSpec } from "../../src/domain/Task.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import type * as Stores from "../../src/services/Stores.js"
import type * as Backend from "../support/Backend.js"
import * as Witness from "./Witness.js"

/** The runtime's options, and the policy its runs are decided by (default `PolicyEngine.allowAll`). */
export interface Options extends Runtime.Options {
  readonly policy?: Layer.Layer<PolicyEngine.PolicyEngine>
}

export type Services = Runtime.Runtime | Stores.Stores | RunDefinition.Registry | Calendar.Calendar

/**
 * A runtime with `definitions` registered, over the backend's stores (a fresh client for SQL
 * backends, the shared maps for memory); `needs` provides what the definitions' steps use.
 */
export const runtime = (
  backend: Backend.Backend,
  definitions: ReadonlyArray<RunDefinition.Any>,
  options: Options = {},
  needs: Layer.Layer<never> | Layer.Layer<unknown> = Layer.empty,
): Layer.Layer<Services, BackendError> => {
  const registered = Layer.mergeAll(
    Layer.empty,
    ...definitions.map((d) =>
      RunDefinition.register(d as RunDefinition.RunDefinition<unknown, unknown, never>).pipe(
        Layer.provide(needs as Layer.Layer<never>),
      ),
    ),
  )
  const base = Layer.mergeAll(RunDefinition.layerRegistry, Calendar.layerWallClock, Witness.noting(backend.layer))
  return Layer.merge(Runtime.layer({ leaseTtlSecs: 30, ...options }), registered).pipe(
    Layer.provide(options.policy ?? PolicyEngine.allowAll),
    Layer.provideMerge(base),
    Layer.provideMerge(Witness.tracing),
  )
}

/** Runs `effect` on `layer`; the tenant is the caller's (use `Backend.asFreshTenant` around a whole test). */
export const on =
  (layer: Layer.Layer<Services, BackendError>) =>
  <A, E>(effect: Effect.Effect<A, E, Services | Tenant>): Effect.Effect<A, E | BackendError, Tenant> =>
    Effect.provide(effect, layer)

/** Counts acts outside the journal: what "performed exactly N times" is measured with. */
export class Counter {
  private readonly counts = new Map<string, number>()
  bump(name: string): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1)
  }
  get(name: string): number {
    return this.counts.get(name) ?? 0
  }
}

export interface Answer {
  readonly ok: string
  readonly n: number
}

/** A kind that counts its acts under `name` and answers `{ok: name, n}`. */
export const counting = (
  counter: Counter,
  name: string,
  options: {
    readonly mutates: boolean
    readonly recovery?: Run.Recovery
    readonly retry?: Run.RetryPolicy
    readonly probe?: (args: { readonly n: number }) => Effect.Effect<EffectKind.Verdict<Answer>, EffectKind.Transient>
  },
) =>
  EffectKind.make<Answer, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Struct({ ok: Schema.String, n: Schema.Number }),
    mutates: options.mutates,
    ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.probe === undefined ? {} : { probe: options.probe }),
    act: ({ n }) =>
      Effect.sync(() => {
        counter.bump(name)
        return { ok: name, n }
      }),
  })

/** As `runtime`, over a given stores layer: `backend.pooled(size)` for a race through a small pool. */
export const runtimeOver = (
  stores: Layer.Layer<Stores.Stores, BackendError>,
  definitions: ReadonlyArray<RunDefinition.Any>,
  options: Options = {},
): Layer.Layer<Services, BackendError> => {
  const registered = Layer.mergeAll(
    Layer.empty,
    ...definitions.map((d) => RunDefinition.register(d as RunDefinition.RunDefinition<unknown, unknown, never>)),
  )
  const base = Layer.mergeAll(RunDefinition.layerRegistry, Calendar.layerWallClock, Witness.noting(stores))
  return Layer.merge(Runtime.layer({ leaseTtlSecs: 30, ...options }), registered).pipe(
    Layer.provide(options.policy ?? PolicyEngine.allowAll),
    Layer.provideMerge(base),
    Layer.provideMerge(Witness.tracing),
  )
}

/** A kind over `{n}` whose act is given: for acts that fail, block, spend or look at the stores. */
export const acting = <R = never>(
  name: string,
  options: {
    readonly mutates: boolean
    readonly recovery?: Run.Recovery
    readonly retry?: Run.RetryPolicy
    readonly spend?: (answer: Answer) => Spend
  },
  act: (n: number, attempt: EffectKind.Attempt) => Effect.Effect<Answer, Rejected | EffectKind.Transient, R>,
) =>
  EffectKind.make<Answer, { readonly n: number }, Rejected, R>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Struct({ ok: Schema.String, n: Schema.Number }),
    error: Rejected,
    mutates: options.mutates,
    ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.spend === undefined ? {} : { spend: options.spend }),
    act: ({ n }, attempt) => act(n, attempt),
  })

/** The declared rejection of `acting` kinds (a declined payment). */
export class Rejected extends Schema.TaggedError<Rejected>()("Rejected", { reason: Schema.String }) {}

/** The journal of a run, oldest first. */
/** `clock` moved `secs` ahead: a later sweep, past the 60 s a timer claim lasts. */
export const clockAhead = (clock: Clock.Clock, secs: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => clock.unsafeCurrentTimeMillis() + secs * 1000,
  currentTimeMillis: Effect.sync(() => clock.unsafeCurrentTimeMillis() + secs * 1000),
  unsafeCurrentTimeNanos: () => clock.unsafeCurrentTimeNanos() + BigInt(secs) * 1_000_000_000n,
  currentTimeNanos: Effect.sync(() => clock.unsafeCurrentTimeNanos() + BigInt(secs) * 1_000_000_000n),
  sleep: (d) => clock.sleep(d),
})

export const journalOf = (run: RunId) => Effect.flatMap(JournalStore, (j) => j.read(run, 1))

/** The payloads of a run's journal of one record kind, in journal order. */
export const recordsOfKind = <K extends Journal.Kind["kind"]>(
  records: ReadonlyArray<Journal.Record>,
  kind: K,
): ReadonlyArray<Journal.Record & { readonly kind: Extract<Journal.Kind, { kind: K }> }> =>
  records.filter((r) => r.kind.kind === kind) as never

/** The step names a run's journal says were compensated, in journal order. */
export const compensatedSteps = (records: ReadonlyArray<Journal.Record>): ReadonlyArray<string> =>
  recordsOfKind(records, "StepCompensated")
    .filter((r) => r.kind.outcome === "compensated")
    .map((r) => (r.kind.compensation as { readonly name: string }).name)

/** Whether the run's latest conclusion is `outcome` (the outcome index). */
export const concludedAs = (run: RunId, outcome: Journal.RunOutcome) =>
  Effect.map(
    Effect.flatMap(JournalStore, (j) => j.runsByOutcome(outcome, 10_000)),
    (runs) => runs.includes(run),
  )

// Battery A: crash points, replay and the protocol's records.

/** Resumes `run` from the runtime in context once its dead owner's lease has lapsed: `LeaseHeld` is retried every 100 ms, 50 times at most. */
export const resumeAfterLapse = (
  run: RunId,
  tries = 50,
): Effect.Effect<Runtime.RunResult<unknown>, Runtime.ResumeError, Runtime.Runtime | Tenant> =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(run)).pipe(
    Effect.catchTag("LeaseHeld", (held) =>
      tries <= 1 ? Effect.fail(held) : Effect.zipRight(Effect.sleep("100 millis"), resumeAfterLapse(run, tries - 1)),
    ),
  )

/** The records of one kind, with their payloads typed. */
export const ofKind = <K extends Journal.KindTag>(records: ReadonlyArray<Journal.Record>, kind: K) =>
  records.flatMap((r) =>
    r.kind.kind === kind ? [{ record: r, kind: r.kind as Extract<Journal.Kind, { kind: K }> }] : [],
  )

/** The effect key an `EffectStarted` record should carry, recomputed from its own descriptor (§3.1). */
export const keyFromDescriptor = (record: Journal.Record): EffectKey.EffectKey => {
  const k = record.kind as Extract<Journal.Kind, { kind: "EffectStarted" }>
  const d = k.descriptor as { readonly kind: string; readonly ordinal: number; readonly args: Json }
  return EffectKey.derive({
    step: record.step,
    phase: record.phase,
    ordinal: d.ordinal,
    attempt: k.attempt,
    kind: d.kind,
    args: d.args,
  })
}

/** A kind like `counting` that also keeps every attempt its act was told of, and may fail an attempt by `script`. */
export const witnessing = (
  counter: Counter,
  name: string,
  options: {
    readonly mutates: boolean
    readonly recovery?: Run.Recovery
    readonly retry?: Run.RetryPolicy
    readonly probe?: (args: { readonly n: number }) => Effect.Effect<EffectKind.Verdict<Answer>, EffectKind.Transient>
    /** Runs before the answer; a failure fails the attempt. */
    readonly script?: (attempt: EffectKind.Attempt) => Effect.Effect<void, EffectKind.Transient>
  },
) => {
  const seen: Array<EffectKind.Attempt> = []
  const kind = EffectKind.make<Answer, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Struct({ ok: Schema.String, n: Schema.Number }),
    mutates: options.mutates,
    ...(options.recovery === undefined ? {} : { recovery: options.recovery }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.probe === undefined ? {} : { probe: options.probe }),
    act: ({ n }, attempt) =>
      Effect.suspend(() => {
        counter.bump(name)
        seen.push(attempt)
        return Effect.as(options.script?.(attempt) ?? Effect.void, { ok: name, n })
      }),
  })
  return { kind, seen }
}

/** A one-step definition performing `kinds` in order with `{n}` and answering the last answer's `n`. */
export const sequence = (
  capability: string,
  kinds: ReadonlyArray<EffectKind.EffectKind<Answer, { readonly n: number }, never>>,
) =>
  RunDefinition.make({
    capability,
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "work",
        body: (input: { readonly n: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            let n = input.n
            for (const kind of kinds) n = (yield* cx.perform(kind, { n })).n
            return n
          }),
      }),
    ],
  })

/**
 * A one-step definition (step `sleep-then-act`) that sleeps 0 s, so its timer is due at once,
 * then performs `act` with `{n}` and answers the act's answer: the sleeper of the wait batteries.
 * Its input is `input`; `n` is read from it by `n` (1 when not given).
 */
export const sleepThenAct = <I, E>(
  capability: string,
  act: EffectKind.EffectKind<Answer, { readonly n: number }, E>,
  input: Schema.Schema<I, EffectKind.Encoded>,
  n: (input: I) => number = () => 1,
) =>
  RunDefinition.make({
    capability,
    input,
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "sleep-then-act",
        body: (given: I) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.sleep(0)
            return yield* cx.perform(act, { n: n(given) })
          }),
      }),
    ],
  })

/**
 * The backend with the number of records of every `append` and `seal` (each one commit) noted in
 * `commits`, and the round trips a run may spend outside them (`acquire`, `cancellation`, the
 * quota's `halted`) noted by name in `others`: the store is real, only watched.
 */
export const watchingCommits = (
  backend: Backend.Backend,
  commits: Array<number>,
  others: Array<string> = [],
): Backend.Backend => ({
  ...backend,
  layer: Layer.map(backend.layer, (context) => {
    const journal = Context.get(context, JournalStore)
    const quotas = Context.get(context, QuotaStore)
    const noted = <A, E, R>(name: string, effect: Effect.Effect<A, E, R>) =>
      Effect.zipRight(
        Effect.sync(() => others.push(name)),
        effect,
      )
    return Context.add(
      Context.add(context, QuotaStore, { ...quotas, halted: () => noted("halted", quotas.halted()) }),
      JournalStore,
      {
        ...journal,
        acquire: (run, owner, ttl) => noted("acquire", journal.acquire(run, owner, ttl)),
        cancellation: (run) => noted("cancellation", journal.cancellation(run)),
        append: (run, epoch, batch, alongside, options) =>
          Effect.zipRight(
            Effect.sync(() => commits.push(batch.length)),
            journal.append(run, epoch, batch, alongside, options),
          ),
        seal: (run, epoch, outcome, last, alongside, options) =>
          Effect.zipRight(
            Effect.sync(() => commits.push(last?.length ?? 0)),
            journal.seal(run, epoch, outcome, last, alongside, options),
          ),
      },
    )
  }),
})

// Battery B: sagas, budgets, admission, case state, races, properties.

/** Any kind over `{n}` answering `Answer`, whatever it rejects with: what a generic step performs. */
export type Kind = EffectKind.EffectKind<Answer, { readonly n: number }, unknown>

/** The obligation a test's windowed task is due at: the asking step registers it (`registerWindow`), the spec names it. */
export const REVIEW = "review"

/** What a run asking with a window does first (§7.7): registers the window as the obligation `REVIEW` on its case. */
export const registerWindow = (window: Option.Option<Deadline.DeadlineSpec>) =>
  Effect.flatMap(StepCtx, (cx) =>
    Option.match(window, { onNone: () => Effect.void, onSome: (w) => Effect.asVoid(cx.deadline(REVIEW, w)) }),
  )

/** A refund-approval task spec for the worklist tests; Proceed consents to going unattended, Escalate escalates to `supervisor`; a window names `REVIEW`. */
export const taskSpec = (options: {
  readonly kind?: string
  readonly onExpiry?: OnExpiry
  readonly window?: Option.Option<Deadline.DeadlineSpec>
  readonly excludedActors?: ReadonlyArray<string>
}) => {
  const onExpiry = options.onExpiry ?? "deny"
  return new TaskSpec({
    kind: options.kind ?? "refund.approve",
    justification: new Justification({
      summary: "refund 40",
      proposedAction: { refund: 40 },
      confidence: Option.none(),
      cost: Option.none(),
      evidence: [],
    }),
    candidateRoles: ["reviewer"],
    priority: "normal",
    deadline: Option.map(options.window ?? Option.none(), () => REVIEW),
    onExpiry,
    escalateTo: onExpiry === "escalate" ? ["supervisor"] : [],
    excludedActors: [...(options.excludedActors ?? [])],
    allowUnattended: onExpiry === "proceed",
  })
}

/**
 * A one-step definition asking a reviewer (`taskSpec` excluding `agent`, window `window`) and, if
 * approved, performing `<prefix>.refund`; it answers the decision's verdict and actor.
 */
export const asking = (prefix: string, counter: Counter, window: Option.Option<Deadline.DeadlineSpec>) => {
  const refund = counting(counter, `${prefix}.refund`, { mutates: true, recovery: Run.Recovery.Retry() })
  return RunDefinition.make({
    capability: `${prefix}.ask.${Option.isSome(window) ? "windowed" : "open"}`,
    input: Schema.Struct({ order: Schema.String }),
    output: Schema.Unknown,
    plan: [
      Step.make({
        name: "ask",
        body: () =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* registerWindow(window)
            const decision = yield* cx.task(taskSpec({ window, excludedActors: ["agent"] }))
            if (decision.approved) yield* cx.perform(refund, { n: 40 })
            return { approved: decision.approved, actor: decision.actor }
          }),
      }),
    ],
  })
}
