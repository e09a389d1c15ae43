/**
 * Steps (§7.3): the units a plan is made of. A step has a name, a saga role and a body written
 * with `Effect.gen` against the step context (`yield* StepCtx.StepCtx`); everything
 * non-deterministic the body does goes through that context.
 */
import type { Effect } from "effect"
import type { StepCtx } from "./StepCtx.js"

/** What the unwind does with a finished step when the run fails or is cancelled. */
export type Role<O, R> =
  /** Default: skipped if the step's journal shows no mutating effect; otherwise the unwind stops and the run is quarantined. */
  | { readonly _tag: "Undeclared" }
  /** The point of no return: it and everything finished before it stay. */
  | { readonly _tag: "Pivot" }
  /** Nothing to undo. */
  | { readonly _tag: "Unnecessary" }
  /** Undone by `compensate`, given what the step returned; runs in phase `compensating`, exempt from the budget. */
  | { readonly _tag: "Compensatable"; readonly compensate: (output: O) => Effect.Effect<void, unknown, StepCtx | R> }

export const Undeclared = { _tag: "Undeclared" } as const
export const Pivot = { _tag: "Pivot" } as const
export const Unnecessary = { _tag: "Unnecessary" } as const
export const compensatable = <O, R>(
  compensate: (output: O) => Effect.Effect<void, unknown, StepCtx | R>,
): Role<O, R> => ({ _tag: "Compensatable", compensate })

/** The outputs of the steps that finished before this one (the run's earlier plan entries). */
export interface Prior {
  /** The output of `step`; a step that has not finished yet is a plan-contract defect. */
  // biome-ignore lint/suspicious/noExplicitAny: any step of the plan
  readonly of: <O>(step: Step<any, O, any, any>) => O
}

export interface Step<I, O, E, R> {
  readonly name: string
  readonly role: Role<O, R>
  readonly body: (input: I, prior: Prior) => Effect.Effect<O, E, StepCtx | R>
}

// biome-ignore lint/suspicious/noExplicitAny: a heterogeneous plan
export type Any = Step<any, any, any, any>

export const make = <I, O, E = never, R = never>(options: {
  readonly name: string
  readonly role?: Role<O, R>
  readonly body: (input: I, prior: Prior) => Effect.Effect<O, E, StepCtx | R>
}): Step<I, O, E, R> => ({ name: options.name, role: options.role ?? Undeclared, body: options.body })
