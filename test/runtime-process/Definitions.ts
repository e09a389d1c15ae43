/**
 * What the kill test's child process and the test itself both register: three runs of one effect
 * each, a mutating one declared `Retry`, a mutating one `RequiresOperator`, and a read (`Retry`,
 * not mutating: an agent's first act is usually a model call). Every act appends a line to a
 * file, outside the journal, so the count survives `kill -9`; in the child the act then blocks
 * forever, so the process dies inside the act, after its announcement (and, being each run's
 * first act, the admission) is durable.
 */
import { appendFileSync } from "node:fs"
import { Effect, type Layer, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Run from "../../src/domain/Run.js"
import type { Backend } from "../../src/errors/StoreError.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import type * as Stores from "../../src/services/Stores.js"

export type Target =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "pg"; readonly url: string }

/** What the parent hands the child on its command line. */
export interface ChildArgs {
  readonly target: Target
  readonly tenant: string
  readonly acts: string
}

export const RECOVERIES = ["retry", "operator", "read"] as const
export type Name = (typeof RECOVERIES)[number]

export const CASE_KIND = "kill-test"
/** The correlation key each run is bound by, so the parent finds the run the dead child admitted. */
export const keyOf = (name: Name) => CorrelationKey.make("kill", name)
/** The child's lease TTL: a dead owner's lease lapses this soon. */
export const LEASE_TTL_SECS = 1

export const definition = (name: Name, options: { readonly acts: string; readonly block: boolean }) => {
  const kind = EffectKind.make<{ readonly charged: number }, { readonly amount: number }>({
    kind: `kill.${name}.charge`,
    args: Schema.Struct({ amount: Schema.Number }),
    success: Schema.Struct({ charged: Schema.Number }),
    mutates: name !== "read",
    recovery: name === "operator" ? Run.Recovery.RequiresOperator() : Run.Recovery.Retry(),
    act: ({ amount }) =>
      Effect.gen(function* () {
        appendFileSync(options.acts, `${name}\n`)
        if (options.block) {
          process.stdout.write(`acted ${name}\n`)
          return yield* Effect.never
        }
        return { charged: amount }
      }),
  })
  return RunDefinition.make({
    capability: `kill.${name}`,
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.Number,
    plan: [
      Step.make({
        name: "charge",
        body: (input: { readonly amount: number }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            const done = yield* cx.perform(kind, { amount: input.amount })
            return done.charged
          }),
      }),
    ],
  })
}

export const stores = (target: Target): Layer.Layer<Stores.Stores, Backend> =>
  target._tag === "sqlite"
    ? SqliteBackend.layer({ filename: target.filename })
    : PgBackend.layer({ url: target.url, maxConnections: 2 })
