/**
 * Effect kinds (§7.1): the declaration of one non-deterministic act a step may perform. A kind
 * names the act, types its arguments, answer and rejection with Schema, says whether it
 * mutates the world and how an attempt left in doubt is recovered, and carries the act itself.
 */
import { Data, type Effect, Option, Schema } from "effect"
import type { EffectKey } from "../domain/EffectKey.js"
import type { RunId } from "../domain/Ids.js"
import type { Phase } from "../domain/Phase.js"
import { type Spend, ZERO } from "../domain/Quota.js"
import * as Run from "../domain/Run.js"

/**
 * A failure that is not the act's answer: the call may be tried again. `disposition` says whether
 * the request reached the other side (`in_doubt`: a timeout after it left) or surely did not;
 * `retryAfterMs` is the provider's advice, capped by the retry policy's `maxAdviceMs`.
 */
export class Transient extends Data.TaggedError("Transient")<{
  readonly message: string
  readonly disposition: "did_not_happen" | "in_doubt"
  readonly retryAfterMs?: number
}> {}

/** What a Reconcile probe found: the act landed (with its answer), did not happen, or cannot be told. */
export type Verdict<A> = Data.TaggedEnum<{
  Landed: { readonly output: A }
  DidNotHappen: Record<never, never>
  InDoubt: { readonly detail: string }
}>
interface VerdictDefinition extends Data.TaggedEnum.WithGenerics<1> {
  readonly taggedEnum: Verdict<this["A"]>
}
export const Verdict = Data.taggedEnum<VerdictDefinition>()

/** What the act is told about the attempt it is making. */
export interface Attempt {
  /** From 1; every retry is a new attempt with a new effect key. */
  readonly attempt: number
  /** The key the provider deduplicates by (`Idempotent`): the same for every attempt of this effect. */
  readonly idempotencyKey: string
  /** The run acting: for a provider's audit trail or a log line that an operator follows back. */
  readonly run: RunId
  /** Forward or compensating: an act may behave differently when it undoes. */
  readonly phase: Phase
  /** This attempt's key, as journaled in its `EffectStarted` (durable before the act begins). */
  readonly effectKey: EffectKey
}

/**
 * The encoded side of a kind's schemas. Any encoding is accepted here and checked as JSON when
 * it is journaled, because TypeScript cannot see that a struct's encoded form is `Json`.
 */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type Encoded = any

export interface EffectKind<A, I, E, R = never> {
  readonly kind: string
  readonly args: Schema.Schema<I, Encoded>
  readonly success: Schema.Schema<A, Encoded>
  readonly error: Schema.Schema<E, Encoded>
  readonly mutates: boolean
  readonly recovery: Run.Recovery
  readonly retry: Run.RetryPolicy
  readonly act: (args: I, attempt: Attempt) => Effect.Effect<A, E | Transient, R>
  readonly probe: Option.Option<(args: I, attempt: Attempt) => Effect.Effect<Verdict<A>, Transient, R>>
  /** What an answer cost, recorded in `EffectDone.spend` and metered against the budget. */
  readonly spend: (output: A) => Spend
  /** The most one attempt may spend, known before it acts: the budget refuses the attempt if this would pass a ceiling. */
  readonly reserve: (args: I) => Spend
}

/** Any kind, for registries and plans. */
// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous collection of kinds
export type Any = EffectKind<any, any, any, any>

export interface Options<A, I, E, R> {
  readonly kind: string
  readonly args: Schema.Schema<I, Encoded>
  readonly success: Schema.Schema<A, Encoded>
  /** The act's answers that are rejections (a declined payment): permanent, handed to the step as a typed failure. */
  readonly error?: Schema.Schema<E, Encoded>
  readonly mutates: boolean
  /** Default: `RequiresOperator` when `mutates`, else `Retry`. */
  readonly recovery?: Run.Recovery
  readonly retry?: Run.RetryPolicy
  /** The rejections it may fail with are the `error` schema's, so they are not inferred from here. */
  readonly act: (args: I, attempt: Attempt) => Effect.Effect<A, NoInfer<E> | Transient, R>
  /** Required with `Reconcile`: asks the provider whether the act landed. */
  readonly probe?: (args: I, attempt: Attempt) => Effect.Effect<Verdict<A>, Transient, R>
  readonly spend?: (output: A) => Spend
  /** Default: nothing reserved, so one attempt may pass a ceiling (§7.3 "passed by one operation at most"). */
  readonly reserve?: (args: I) => Spend
}

/** Declares a kind; a `Reconcile` kind without a probe is refused here, at definition time. */
export const make = <A, I, E = never, R = never>(options: Options<A, I, E, R>): EffectKind<A, I, E, R> => {
  const recovery = options.recovery ?? (options.mutates ? Run.Recovery.RequiresOperator() : Run.Recovery.Retry())
  if (recovery._tag === "Reconcile" && options.probe === undefined) {
    throw new Error(`effect kind ${options.kind}: Reconcile needs a probe`)
  }
  if (options.kind.length === 0) throw new Error("an effect kind needs a non-empty kind string")
  return {
    kind: options.kind,
    args: options.args,
    success: options.success,
    error: (options.error ?? NeverJson) as Schema.Schema<E, Encoded>,
    mutates: options.mutates,
    recovery,
    retry: options.retry ?? Run.once,
    act: options.act,
    probe: Option.fromNullable(options.probe),
    spend: options.spend ?? zeroSpend,
    reserve: options.reserve ?? zeroSpend,
  }
}

/** One call of a kind with its arguments: what `cx.all` takes. */
export interface Call<out A, out E, out R> {
  readonly _tag: "Call"
  readonly kind: Any
  readonly args: unknown
  readonly _A?: () => A
  readonly _E?: () => E
  readonly _R?: () => R
}

export const call = <A, I, E, R>(kind: EffectKind<A, I, E, R>, args: I): Call<A, E, R> => ({
  _tag: "Call",
  kind,
  args,
})

// internal

const NeverJson = Schema.Never as unknown as Schema.Schema<never, Encoded>
const zeroSpend = (): Spend => ZERO
