/**
 * One attempt of an effect (§7.1): the act, run once under its announcement, and the outcome it
 * records under the attempt's key; and the probe's reconciliation of an attempt left in doubt.
 * What an attempt came to (`Step`) tells the protocol whether to answer, reject or try again.
 */
import { Cause, Effect, Exit, Option, Schema } from "effect"
import type * as EffectKey from "../domain/EffectKey.js"
import * as Journal from "../domain/Journal.js"
import { type Json, Json as JsonSchema } from "../domain/Json.js"
import * as Quota from "../domain/Quota.js"
import type * as Run from "../domain/Run.js"
import type { EffectKind, Encoded } from "./EffectKind.js"
import * as EffectKindM from "./EffectKind.js"
import * as Execution from "./Execution.js"
import * as Metering from "./Metering.js"
import * as Observability from "./Observability.js"
import type * as Writer from "./Writer.js"

type Exec = Execution.Execution

/** What one attempt came to: an answer, a declared rejection, or a failure that may be retried. */
export type Step<A> =
  | { readonly _tag: "Answer"; readonly value: A }
  | { readonly _tag: "Rejected"; readonly error: unknown }
  | {
      readonly _tag: "Again"
      readonly message: string
      readonly adviceMs: Option.Option<number>
      /** The attempt never reached the provider (a crash before any outcome, probed did-not-happen). */
      readonly unspent: boolean
    }

export const answer = <A>(value: A): Step<A> => ({ _tag: "Answer", value })
export const again = (
  message: string,
  adviceMs: Option.Option<number> = Option.none(),
  unspent = false,
): Step<never> => ({
  _tag: "Again",
  message,
  adviceMs,
  unspent,
})

export const reconcile = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  kind: EffectKind<A, I, E, R>,
  args: I,
  key: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
  /** The doubt comes from a crash (no outcome recorded), not from a failure the act reported. */
  crashed = false,
): Effect.Effect<Step<A>, never, R> =>
  Effect.gen(function* () {
    const probe = Option.getOrThrowWith(kind.probe, () => new Error(`${kind.kind}: Reconcile without a probe`))
    yield* write(exec, exec.writer.beforeAct())
    const verdict = yield* Effect.exit(probe(args, actContext(exec, at, key, attempt, idempotencyKey)))
    const reconciled = (disposition: Run.Disposition, output: Json, detail: string) =>
      outcomeRecord(exec, at, kind, key, {
        kind: "EffectReconciled",
        disposition,
        output,
        spend: Execution.spendJson(Quota.ZERO),
        detail,
        declared: "untrusted",
      })
    if (Exit.isFailure(verdict)) {
      if (Cause.isInterruptedOnly(verdict.cause)) return yield* Effect.interrupt
      yield* reconciled("in_doubt", null, `the probe failed: ${Cause.squash(verdict.cause)}`)
      Observability.reconciled("in_doubt")
      return yield* quarantine(exec, at, `${kind.kind} ek:${key}: the probe failed, so the act stays in doubt`)
    }
    const v = verdict.value
    Observability.reconciled(v._tag)
    switch (v._tag) {
      case "Landed": {
        const output = yield* encode(exec, kind.success, v.output, `probed answer of ${kind.kind}`)
        yield* reconciled("landed", output, "the probe found the act landed")
        return answer(v.output)
      }
      case "DidNotHappen":
        yield* reconciled("did_not_happen", null, "the probe found the act did not happen")
        return again("did not happen", Option.none(), crashed)
      case "InDoubt":
        yield* reconciled("in_doubt", null, v.detail)
        return yield* quarantine(exec, at, `${kind.kind} ek:${key} stayed in doubt after its probe: ${v.detail}`)
    }
  })

/** Acts once and records what came of it under `key`. */
export const actAndRecord = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  kind: EffectKind<A, I, E, R>,
  args: I,
  key: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
): Effect.Effect<Step<A>, never, R> =>
  Effect.gen(function* () {
    yield* write(exec, exec.writer.beforeAct())
    Observability.performedEffect(kind.kind)
    const cx = actContext(exec, at, key, attempt, idempotencyKey)
    const exit = yield* Effect.exit(
      Effect.suspend(() => {
        const fake = exec.fake(kind.kind)
        return fake === undefined ? kind.act(args, cx) : (fake(args, cx) as Effect.Effect<A, E | EffectKindM.Transient>)
      }).pipe(
        // The run and the key tie a trace to the journal's records of this very attempt.
        Effect.withSpan("agentplane.effect", {
          attributes: { kind: kind.kind, attempt, "agentplane.run": exec.run, "agentplane.effect_key": key },
          captureStackTrace: false,
        }),
      ),
    )
    yield* crashPoint(exec, "after_act", kind.kind, attempt)
    const failed = (error: Json, disposition: Run.Disposition, permanent: boolean) =>
      outcomeRecord(exec, at, kind, key, {
        kind: "EffectFailed",
        error,
        spend: Execution.spendJson(Quota.ZERO),
        disposition,
        permanent,
      })
    if (Exit.isSuccess(exit)) {
      const output = yield* encode(exec, kind.success, exit.value, `answer of ${kind.kind}`)
      const spend = kind.spend(exit.value)
      Metering.meter(exec, at, spend, true)
      yield* outcomeRecord(exec, at, kind, key, {
        kind: "EffectDone",
        output,
        source: kind.kind,
        spend: Execution.spendJson(spend),
        declared: "untrusted",
      })
      return answer(exit.value)
    }
    if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && failure.value instanceof EffectKindM.Transient) {
      const t = failure.value
      yield* failed({ message: t.message }, t.disposition, false)
      if (t.disposition === "in_doubt" && kind.recovery._tag === "RequiresOperator") {
        Observability.undecidable()
        return yield* quarantine(
          exec,
          at,
          `${kind.kind} ek:${key} timed out in doubt; its recovery is RequiresOperator`,
        )
      }
      if (t.disposition === "in_doubt" && kind.recovery._tag === "Reconcile") {
        return yield* reconcile(exec, at, kind, args, key, attempt, idempotencyKey)
      }
      return again(t.message, Option.fromNullable(t.retryAfterMs))
    }
    if (Option.isSome(failure)) {
      const error = yield* encode(exec, kind.error, failure.value as E, `rejection of ${kind.kind}`)
      yield* failed(error, "landed", true)
      return { _tag: "Rejected", error: failure.value }
    }
    // A defect in the act: nobody can say whether the request left, so it is in doubt.
    const message = Cause.pretty(exit.cause)
    yield* failed({ message }, "in_doubt", false)
    if (kind.recovery._tag === "RequiresOperator") {
      Observability.undecidable()
      return yield* quarantine(exec, at, `${kind.kind} ek:${key} died in doubt; its recovery is RequiresOperator`)
    }
    if (kind.recovery._tag === "Reconcile") return yield* reconcile(exec, at, kind, args, key, attempt, idempotencyKey)
    return again(message)
  })

export const actContext = (
  exec: Exec,
  at: Execution.At,
  effectKey: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
): EffectKindM.Attempt => ({ attempt, idempotencyKey, run: exec.run, phase: at.phase, effectKey })

export const outcomeRecord = (
  exec: Exec,
  at: Execution.At,
  kind: EffectKindM.Any,
  key: EffectKey.EffectKey,
  payload: Journal.Kind,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    // Staged: it rides with the next commit, which comes before the next act (`beforeAct`).
    exec.writer.stage(
      Journal.built({ case: at.case, step: at.step, phase: at.phase, effectKey: Option.some(key), kind: payload }),
    )
    if (exec.crash("after_record", kind.kind, 0)) {
      yield* write(exec, exec.writer.flush())
      yield* Execution.halt(exec, Execution.Stop.Crash({ point: "after_record" }))
    }
  })

export const crashPoint = (
  exec: Exec,
  point: Execution.CrashPoint,
  kind: string,
  attempt: number,
): Effect.Effect<void> =>
  exec.crash(point, kind, attempt) ? Execution.halt(exec, Execution.Stop.Crash({ point })) : Effect.void

/** Quarantines the run; the message names the step and phase, for the operator who reads it in `GET /runs/{run}`. */
export const quarantine = (exec: Exec, at: Execution.At, message: string): Effect.Effect<never> =>
  Execution.halt(
    exec,
    Execution.Stop.Quarantine({ message: `${message} ${Execution.placeOf(exec, at)}`, divergence: Option.none() }),
  )

/** A journal write; its failure stops the execution, leaving the run as the journal says. */
export const write = <E, R>(exec: Exec, effect: Effect.Effect<void, E, R>): Effect.Effect<void, never, R> =>
  Effect.catchAll(effect, (error) => Execution.halt(exec, Execution.stopOf(error as Writer.WriteError)))

export const encode = <A>(exec: Exec, schema: Schema.Schema<A, Encoded>, value: A, what: string): Effect.Effect<Json> =>
  Effect.catchAll(Effect.flatMap(Schema.encode(schema)(value), Schema.decodeUnknown(JsonSchema)), (e) =>
    Execution.halt(exec, Execution.Stop.Contract({ detail: `${what} do not match their schema: ${e.message}` })),
  )

export const decode = <A>(exec: Exec, schema: Schema.Schema<A, Encoded>, value: Json, what: string): Effect.Effect<A> =>
  Effect.catchAll(Schema.decodeUnknown(schema)(value), (e) =>
    Execution.halt(
      exec,
      Execution.Stop.Quarantine({
        message: `the ${what} no longer decodes with the definition's schema: ${e.message}`,
        divergence: Option.none(),
      }),
    ),
  )

export const spendOf = (json: Json): Quota.Spend => {
  const s = json as { readonly tokens?: unknown; readonly minor_units?: unknown } | null
  const n = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0)
  // `n` admits amounts only, so the class's validation would only repeat it.
  return new Quota.Spend({ tokens: n(s?.tokens), minorUnits: n(s?.minor_units) }, true)
}

export const messageOf = (error: Json): string => {
  const message =
    error !== null && typeof error === "object" && !Array.isArray(error)
      ? (error as { readonly message?: Json }).message
      : undefined
  return typeof message === "string" ? message : JSON.stringify(error)
}
