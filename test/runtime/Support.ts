/**
 * What the runtime battery shares: a runtime over a backend's stores, built fresh per call so a
 * test can play "a fresh process" by building a second one over the same database, counters kept
 * outside the journal, and a few effect kinds whose acts count themselves.
 */
import { Effect, Layer, Schema } from "effect"
import * as Calendar from "../../src/domain/Calendar.js"
import type * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import type * as Stores from "../../src/services/Stores.js"
import type * as Backend from "../support/Backend.js"

export type Services = Runtime.Runtime | Stores.Stores | RunDefinition.Registry | Calendar.Calendar

/** A runtime with `definitions` registered, over the backend's stores (a fresh client for SQL backends, the shared maps for memory). */
export const runtime = (
  backend: Backend.Backend,
  definitions: ReadonlyArray<RunDefinition.Any>,
  options: Runtime.Options = {},
): Layer.Layer<Services, BackendError> => {
  const registered = Layer.mergeAll(
    Layer.empty,
    ...definitions.map((d) => RunDefinition.register(d as RunDefinition.RunDefinition<unknown, unknown, never>)),
  )
  const base = Layer.mergeAll(RunDefinition.layerRegistry, Calendar.layerWallClock, backend.layer)
  return Layer.merge(Runtime.layer({ leaseTtlSecs: 30, ...options }), registered).pipe(Layer.provideMerge(base))
}

/** Runs `effect` on `layer`; the tenant is the caller's (use `Backend.asFreshTenant` around a whole test). */
export const on =
  <A, E>(layer: Layer.Layer<Services, BackendError>) =>
  (effect: Effect.Effect<A, E, Services | Tenant>): Effect.Effect<A, E | BackendError, Tenant> =>
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
