/**
 * The caller's half of a wake-up (§7.9 resumeSubscription, §7.10 timers) and the background it
 * hands the resume to. `wake` takes the run's lease, retrying a live one with doubling backoff
 * from 25 ms to 1 s; if its owner is still live, it leaves the answer to it (`Busy`). Otherwise
 * it reads the journal once and stages the answer under the wait's effect unless the journal
 * already has one. The resume drives the run under the same lease; the caller runs it in the
 * background (at most `wakeConcurrency` at a time), so an HTTP delivery or a sweep is not held by
 * the run's next effects. The answer rides with the run's first commit (its next announcement,
 * suspension or seal) instead of costing one of its own, and so does `release` (disarm the
 * timer, drop the wait and the claimed payload): one transaction, so both are durable or neither
 * is. A sealed run's stale wait is released and `NotWaiting`. On shutdown background resumes are
 * interrupted, their leases lapse, and the sweeper's recovery pass resumes them.
 */
import { Duration, Effect, FiberSet, Option, Schedule } from "effect"
import type * as EffectKey from "../../domain/EffectKey.js"
import type { Epoch, RunId } from "../../domain/Ids.js"
import type { Json } from "../../domain/Json.js"
import { Tenant } from "../../domain/Tenant.js"
import type { Backend } from "../../errors/StoreError.js"
import { type Holding, stage, type Woke } from "../Wakeup.js"
import type { EngineState } from "./EngineState.js"
import { loadFrom, SEALED, sameBundle } from "./Load.js"
import { resumeLoaded } from "./Resume.js"

/** The source a fired timer's answer is recorded with. */
export const TIMER_SOURCE = "agentplane://timer"

export const wake = (
  state: EngineState,
  run: RunId,
  effect: EffectKey.EffectKey,
  output: Json,
  source: string,
  release: Effect.Effect<void, Backend, Tenant>,
  settled?: (durable: boolean) => void,
) =>
  Effect.gen(function* () {
    const lease = yield* state.journal.acquire(run, state.owner, state.ttl).pipe(
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
    return yield* wakeHeld(state, run, lease.value.epoch, effect, output, source, release, settled)
  })

/**
 * `wake` once the run's lease `epoch` is held: the lease is given back on every path but
 * `Resumed`. `settled` learns whether the answer became durable: at once when the journal held
 * it already, else at the resumed run's first commit, or `false` when the run stopped before one
 * (§7.11: a timer counts as fired only once its answer is durable).
 */
export const wakeHeld = (
  state: EngineState,
  run: RunId,
  epoch: Epoch,
  effect: EffectKey.EffectKey,
  output: Json,
  source: string,
  release: Effect.Effect<void, Backend, Tenant>,
  settled?: (durable: boolean) => void,
) =>
  Effect.gen(function* () {
    const giveBack = Effect.ignore(state.journal.releaseLease(run, epoch))
    const prepared = yield* Effect.gen(function* () {
      const records = yield* state.journal.read(run, 1)
      const started = records.find((r) => r.kind.kind === "EffectStarted" && Option.contains(r.effectKey, effect))
      if (started === undefined) return Option.none()
      const answered = records.some((r) => r.kind.kind !== "EffectStarted" && Option.contains(r.effectKey, effect))
      const answer = answered ? Option.none() : Option.some(stage(run, records, started, effect, output, source))
      const loaded = yield* loadFrom(
        state,
        run,
        Option.isSome(answer) ? [...records, answer.value.record] : records,
        true,
      )
      yield* sameBundle(state, run, loaded.admitted)
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
    const resume = resumeLoaded(state, run, loaded, epoch, loaded.entry, {
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
 * Runs a woken run's resume in the background, under one of the `wakeConcurrency` permits. The
 * lease was taken before the permit, so it is renewed while the resume queues for one (issue 16
 * C): unrenewed, it lapsed under its live owner behind long runs, and another instance's recovery
 * resumed the run too. The caller (an HTTP delivery) is not held: it returns once the resume is
 * forked. The lease is held until the permit is (or the fiber ends without one); from then on
 * `drive` holds it.
 */
export const inBackground = (
  state: EngineState,
  woke: { readonly resume: Effect.Effect<void, never, Tenant>; readonly lease: Holding },
) =>
  FiberSet.run(
    state.background,
    Effect.suspend(() => {
      const queued = state.holdings.hold(woke.lease.run, woke.lease.epoch, woke.lease.tenant)
      return state.wakers
        .withPermits(1)(
          Effect.zipRight(
            Effect.sync(() => state.holdings.unhold(queued)),
            woke.resume,
          ),
        )
        .pipe(Effect.ensuring(Effect.sync(() => state.holdings.unhold(queued))))
    }),
  )
