/**
 * Durable waits (§7.6, §7.8): a step asks for an event or a moment, and the run suspends until a
 * delivery or a timer answers. The announce is durable before the subscription or timer is
 * written, and the buffer is read after the subscription is durable, so an event that arrived
 * early is found, one that arrives late finds the subscription, and nothing falls between them.
 */
import { type Context, Effect, Option } from "effect"
import type { CorrelationKey } from "../domain/CorrelationKey.js"
import * as EffectKey from "../domain/EffectKey.js"
import { Subscription } from "../domain/Event.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import * as Quota from "../domain/Quota.js"
import type * as Run from "../domain/Run.js"
import type { Tenant } from "../domain/Tenant.js"
import { Timestamp } from "../domain/Time.js"
import { Timer } from "../domain/Timer.js"
import { NonDeterminism } from "../errors/RuntimeError.js"
import { CaseStore } from "../services/CaseStore.js"
import { EventStore } from "../services/EventStore.js"
import { JournalStore } from "../services/JournalStore.js"
import type { TaskStore } from "../services/TaskStore.js"
import { TimerStore } from "../services/TimerStore.js"
import * as Execution from "./Execution.js"
import * as History from "./History.js"
import * as Observability from "./Observability.js"
import * as StepEnds from "./StepEnds.js"

type Exec = Execution.Execution

import type { AwaitSpec, Fired, Received } from "./WaitSpec.js"

export type { AwaitSpec, Fired, Received }

export type Services = CaseStore | EventStore | TimerStore | TaskStore | JournalStore | Tenant

export const AWAIT_KIND = "event.await"
export const SLEEP_KIND = "timer.sleep"

/** §7.6: wait for an event of `kind` on any of `correlation`. */
export const awaitEvent = (
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  spec: AwaitSpec,
  services: Context.Context<Services>,
): Effect.Effect<Received> =>
  Effect.gen(function* () {
    if (spec.correlation.length === 0) {
      return yield* Execution.halt(
        exec,
        Execution.Stop.Contract({ detail: `awaitEvent(${spec.kind}) needs at least one key` }),
      )
    }
    const until = yield* obligationDue(exec, at, services, `awaitEvent(${spec.kind})`, spec.deadline)
    return yield* wait(exec, at, ordinal, services, {
      effectKind: AWAIT_KIND,
      args: { kind: spec.kind },
      eventKind: spec.kind,
      correlation: spec.correlation,
      until,
      beforeSuspend: Effect.void,
      onCancel: Effect.void,
    })
  })

/** What a wait is: the effect it is journaled as, the event that answers it, and what must exist before the buffer is read. */
export interface WaitSpec {
  readonly effectKind: string
  readonly args: Json
  readonly eventKind: string
  readonly correlation: ReadonlyArray<CorrelationKey>
  readonly until: number | null
  /** Runs after the subscription is durable and before the buffer is checked (§7.7 opens the task here). */
  readonly beforeSuspend: Effect.Effect<void, unknown, Services>
  /** Runs when a cancellation ends the wait (§7.11: an open task expires). */
  readonly onCancel: Effect.Effect<void, unknown, Services>
}

/**
 * §7.11: a suspended run is at a step boundary, so a cancellation request is honoured at its
 * wait: the wait is dropped, `onCancel` runs, nothing after the wait runs, and the run unwinds.
 * While replaying, the journal says whether this wait was where a cancellation was honoured.
 */
const honourCancellation = (
  exec: Exec,
  at: Execution.At,
  services: Context.Context<Services>,
  key: EffectKey.EffectKey,
  onCancel: Effect.Effect<void, unknown, Services>,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    const journaled = exec.history.started.has(at.step) ? exec.history.cancelledAt.get(at.step) : undefined
    const request =
      journaled !== undefined
        ? Option.some({ actor: journaled.actor, reason: journaled.reason })
        : exec.mode === "strict"
          ? Option.none()
          : yield* store(
              exec,
              services,
              Effect.flatMap(JournalStore, (j) => j.cancellation(exec.run)),
            )
    if (Option.isNone(request)) return
    const { actor, reason } = request.value
    if (exec.mode !== "strict") {
      yield* store(
        exec,
        services,
        Effect.flatMap(EventStore, (e) => e.unsubscribe(exec.run, key)),
      )
      yield* store(exec, services, onCancel)
    }
    exec.writer.stage(
      Journal.built({
        case: at.case,
        step: at.step,
        phase: at.phase,
        effectKey: Option.none(),
        kind: { kind: "RunCancelled", actor, reason },
      }),
    )
    return yield* Execution.halt(exec, Execution.Stop.Cancel({ actor, reason }))
  })

/**
 * The wait itself (§7.6 Live): the announce is durable, then `subscribe`, `beforeSuspend`,
 * `claimFor`. A hit is recorded and then unsubscribed; a miss suspends the run. Resume repeats
 * the three (each idempotent), which also recovers an event claimed before a crash.
 */
export const wait = (
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  services: Context.Context<Services>,
  spec: WaitSpec,
): Effect.Effect<Received> =>
  Effect.gen(function* () {
    const key = EffectKey.derive({
      step: at.step,
      phase: at.phase,
      ordinal,
      attempt: 1,
      kind: spec.effectKind,
      args: spec.args,
    })
    const reason: Run.SuspendReason = {
      reason: "awaiting_event",
      kind: spec.eventKind,
      correlation: spec.correlation.map((k) => ({ namespace: k.namespace, value: k.value })),
      until: spec.until === null ? null : Timestamp.make(spec.until),
    }
    const answered = yield* journaled(exec, at, ordinal, key, spec.effectKind, spec.args, reason)
    if (Option.isSome(answered)) return received(spec.eventKind, answered.value)
    yield* honourCancellation(exec, at, services, key, spec.onCancel)
    const sub = new Subscription({
      run: exec.run,
      case: at.case,
      effect: key,
      step: at.step,
      phase: at.phase,
      kind: spec.eventKind,
      correlation: [...spec.correlation],
    })
    const now = yield* nowSecs
    yield* store(
      exec,
      services,
      Effect.flatMap(EventStore, (e) => e.subscribe(sub, now)),
    )
    yield* store(exec, services, spec.beforeSuspend)
    const hit = yield* store(
      exec,
      services,
      Effect.flatMap(EventStore, (e) => e.claimFor(sub, now)),
    )
    if (Option.isNone(hit)) return yield* suspend(exec, at, reason)
    const event = hit.value.event
    // The outcome is durable before the wait goes: unsubscribe erases the claimed payload.
    yield* write(exec, exec.writer.flush([done(at, key, event.payload, event.source)]))
    yield* store(
      exec,
      services,
      Effect.flatMap(EventStore, (e) => e.unsubscribe(exec.run, key)),
    )
    return received(spec.eventKind, { output: event.payload, source: event.source })
  })

/**
 * When the obligation `name` on the run's case falls due: what a wait or a task lasts until
 * (§7.6, §7.7). The run registers its obligations and meets or cancels them itself, so a name
 * that is not registered is a plan-contract error, never an obligation made up on the spot.
 *
 * Strict replay reads it from the run's own journal, the instant its last `DeadlineRegistered`
 * of that name resolved to: Strict replays records handed in without their stores (the replay
 * gate, §7.13), and the store holds today's obligation, not the one the run saw. An obligation
 * only another run of the case registered is read from the store, as Live and Resume read it.
 */
export const obligationDue = (
  exec: Exec,
  at: Execution.At,
  services: Context.Context<Services>,
  what: string,
  name: string,
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const kase = yield* needCase(exec, at, what)
    if (exec.mode === "strict") {
      const records = exec.history.records
      for (let i = records.length - 1; i >= 0; i--) {
        const k = records[i]?.kind
        if (k?.kind === "DeadlineRegistered" && k.name === name) return k.resolved_at
      }
    }
    const deadlines = yield* store(
      exec,
      services,
      Effect.flatMap(CaseStore, (c) => c.deadlines(kase)),
    )
    const obligation = deadlines.find((d) => d.name === name)
    if (obligation === undefined) {
      return yield* Execution.halt(
        exec,
        Execution.Stop.Contract({ detail: `${what} names deadline '${name}', which is not registered` }),
      )
    }
    return obligation.resolvedAt
  })

export const needCase = (exec: Exec, at: Execution.At, what: string) =>
  Option.match(at.case, {
    onNone: () =>
      Execution.halt(exec, Execution.Stop.Contract({ detail: `${what} needs a case, and this run has none` })),
    onSome: Effect.succeed,
  })

/** §7.8: sleep until `until` (its fraction of a second dropped). */
export const sleepUntil = (
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  until: number,
  services: Context.Context<Services>,
): Effect.Effect<Fired> =>
  Effect.gen(function* () {
    const fireAt = Timestamp.make(Math.floor(until))
    const args: Json = { until: fireAt }
    const key = EffectKey.derive({ step: at.step, phase: at.phase, ordinal, attempt: 1, kind: SLEEP_KIND, args })
    const reason: Run.SuspendReason = { reason: "awaiting_time", until: fireAt }
    const answered = yield* journaled(exec, at, ordinal, key, SLEEP_KIND, args, reason)
    if (Option.isSome(answered)) {
      // The journaled answer (§7.8: the due instant, not when a sweep noticed it).
      const fired = (answered.value.output as { readonly fired_at?: unknown } | null)?.fired_at
      return { firedAt: typeof fired === "number" ? Timestamp.make(fired) : fireAt }
    }
    yield* honourCancellation(
      exec,
      at,
      services,
      key,
      Effect.flatMap(TimerStore, (t) => t.disarm(exec.run, key)),
    )
    // Arming is idempotent and keeps the first fireAt, so Resume re-arms an announcement a crash
    // left without a timer.
    yield* store(
      exec,
      services,
      Effect.flatMap(TimerStore, (t) =>
        t.arm(new Timer({ run: exec.run, case: at.case, effect: key, step: at.step, phase: at.phase, fireAt })),
      ),
    )
    return yield* suspend(exec, at, reason)
  })

// internal

const nowSecs = Effect.clockWith((c) => c.currentTimeMillis).pipe(
  Effect.map((ms) => Timestamp.make(Math.floor(ms / 1000))),
)

const received = (kind: string, answer: { readonly output: Json; readonly source: string }): Received => ({
  payload: answer.output,
  source: answer.source,
  provenance: `event:${kind}`,
})

/**
 * The journal's side of a wait: its answer when recorded; none to go on waiting (announcing it
 * first when live). Strict without an answer reproduces the suspension the journal ends in, or
 * overruns.
 */
const journaled = (
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  key: EffectKey.EffectKey,
  kind: string,
  args: Json,
  reason: Run.SuspendReason,
): Effect.Effect<Option.Option<{ readonly output: Json; readonly source: string }>> =>
  Effect.gen(function* () {
    const slot = History.slotOf(at.phase, at.step, ordinal)
    const found = History.attemptAt(exec.history, slot, 1)
    if (Option.isSome(found)) {
      const j = found.value
      if (j.key !== key || j.kind !== kind) {
        const divergence = new NonDeterminism({
          run: exec.run,
          seq: j.seq,
          expected: { key: j.key, kind: j.kind },
          offered: { key, kind },
        })
        Observability.divergence()
        return yield* Execution.halt(
          exec,
          Execution.Stop.Quarantine({
            message: `${divergence.message} ${Execution.placeOf(exec, at)}`,
            divergence: Option.some(divergence),
          }),
        )
      }
      exec.history.unvisited.delete(j.key)
      if (at.phase === "forward") exec.usage.effects += 1
      const outcome = Option.map(j.outcome, (r) => r.kind)
      if (Option.isSome(outcome) && outcome.value.kind === "EffectDone") {
        Observability.replayedEffect(kind)
        return Option.some({ output: outcome.value.output, source: outcome.value.source })
      }
      // A cancellation honoured at this wait is replayed by the caller (`honourCancellation`).
      if (exec.mode === "strict" && !exec.history.cancelledAt.has(at.step)) {
        const suspended = exec.history.records.some((r) => r.seq > j.seq && r.kind.kind === "RunSuspended")
        return yield* Execution.halt(
          exec,
          suspended
            ? Execution.Stop.Suspend({ reason, step: at.step })
            : Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }),
        )
      }
      return Option.none()
    }
    const afterEnd = StepEnds.askedAfterEnd(exec, at, { key, kind })
    if (afterEnd !== undefined) return yield* afterEnd
    if (exec.mode === "strict")
      return yield* Execution.halt(exec, Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }))
    if (Option.isSome(exec.stop)) return yield* Effect.interrupt
    if (at.phase === "forward") exec.usage.effects += 1
    // Durable before the subscription or timer exists, so whatever answers it finds its announce.
    yield* write(
      exec,
      exec.writer.flush([
        Journal.built({
          case: at.case,
          step: at.step,
          phase: at.phase,
          effectKey: Option.some(key),
          kind: {
            kind: "EffectStarted",
            descriptor: { kind, ordinal, args },
            recovery: "retry",
            mutates: false,
            attempt: 1,
            backoff_ms: 0,
            outbound_label: "internal",
          },
        }),
      ]),
    )
    return Option.none()
  })

const suspend = (exec: Exec, at: Execution.At, reason: Run.SuspendReason): Effect.Effect<never> =>
  Execution.halt(exec, Execution.Stop.Suspend({ reason, step: at.step }))

/** The `EffectDone` a wait's answer is recorded with. */
export const done = (
  at: {
    readonly case: Journal.Append["case"]
    readonly step: Journal.Append["step"]
    readonly phase: Journal.Append["phase"]
  },
  key: EffectKey.EffectKey,
  output: Json,
  source: string,
): Journal.Append =>
  // `output` is a `Json` its boundary decoded (an event's payload, a decision, a timer's own answer).
  Journal.built({
    case: at.case,
    step: at.step,
    phase: at.phase,
    effectKey: Option.some(key),
    kind: {
      kind: "EffectDone",
      output,
      source,
      spend: Execution.spendJson(Quota.ZERO),
      declared: "untrusted",
    },
  })

const write = <E>(exec: Exec, effect: Effect.Effect<void, E>): Effect.Effect<void> =>
  Effect.catchAll(effect, (error) => Execution.halt(exec, Execution.stopOf(error as never)))

const store = <A, E>(
  exec: Exec,
  services: Context.Context<Services>,
  effect: Effect.Effect<A, E, Services>,
): Effect.Effect<A> =>
  Effect.catchAll(Effect.provide(effect, services) as Effect.Effect<A, E>, (error) =>
    Execution.halt(exec, Execution.Stop.Store({ error: error as never })),
  )
