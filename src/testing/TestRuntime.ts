/**
 * A runtime for users' own tests (Temporal's test environment is the model): the real runtime on
 * the memory backend (or any backend layer), the wall-clock calendar, the definitions under test
 * registered, and a way to crash an execution at a named boundary so a test can prove its run
 * survives a process dying there. Run it under `TestClock` (the default of `it.effect`) to move
 * time: leases, deadlines and the journaled clock all read `Clock`.
 */
import { Layer } from "effect"
import * as Calendar from "../domain/Calendar.js"
import type { Backend } from "../errors/StoreError.js"
import * as MemoryBackend from "../layers/memory/MemoryBackend.js"
import type { CrashPoint } from "../runtime/Execution.js"
import * as ReplayGate from "../runtime/ReplayGate.js"
import * as RunDefinition from "../runtime/RunDefinition.js"
import * as Runtime from "../runtime/Runtime.js"
import * as PolicyEngine from "../services/PolicyEngine.js"
import type * as Stores from "../services/Stores.js"

export interface Options extends Runtime.Options {
  /** The stores; default a fresh memory backend. */
  readonly stores?: Layer.Layer<Stores.Stores, Backend>
  /**
   * The policy the runs' effects are decided by; default `PolicyEngine.allowAll`, the explicit
   * choice of a test about what a definition does. A test of the policy itself gives its Cedar
   * engine (`PolicyEngineCedar.layer`), or `PolicyEngine.denyAll` to see a run refused.
   */
  readonly policy?: Layer.Layer<PolicyEngine.PolicyEngine>
}

/** The runtime with `definitions` registered; the stores, registry and calendar are in the context too. */
export const layer = (
  definitions: ReadonlyArray<RunDefinition.RunDefinition<never, unknown, never> | RunDefinition.Any>,
  options: Options = {},
): Layer.Layer<Runtime.Runtime | Stores.Stores | RunDefinition.Registry | Calendar.Calendar, Backend> => {
  const registered = Layer.mergeAll(
    Layer.empty,
    ...definitions.map((d) => RunDefinition.register(d as RunDefinition.RunDefinition<unknown, unknown, never>)),
  )
  const base = Layer.mergeAll(
    RunDefinition.layerRegistry,
    Calendar.layerWallClock,
    options.stores ?? MemoryBackend.layer,
  )
  return Layer.merge(Runtime.layer(options), registered).pipe(
    Layer.provide(options.policy ?? PolicyEngine.allowAll),
    Layer.provideMerge(base),
  )
}

/** A crash predicate for `Options.crash`: stop the `nth` (from 1) time `kind` reaches `point`. */
export const crashAt = (point: CrashPoint, kind: string, nth = 1) => {
  let seen = 0
  return (p: CrashPoint, k: string): boolean => {
    if (p !== point || k !== kind) return false
    seen += 1
    return seen === nth
  }
}

/**
 * The runtime `ReplayGate.check` replays under, with `definitions` registered (their steps'
 * services provided): a project's own test asserts that every run of a recorded export replays.
 */
export const replayLayer = (
  definitions: ReadonlyArray<RunDefinition.RunDefinition<never, unknown, never> | RunDefinition.Any>,
): Layer.Layer<Runtime.Runtime | RunDefinition.Registry> =>
  ReplayGate.layerWith(
    Layer.mergeAll(
      Layer.empty,
      ...definitions.map((d) => RunDefinition.register(d as RunDefinition.RunDefinition<unknown, unknown, never>)),
    ),
    MemoryBackend.layer,
  )
