/**
 * A run's journal read back into what resume, replay and a wake-up need: its history, its
 * registered definition, its decoded input, its budget and when it was admitted, each checked
 * (an admission present, the definition registered here at the version the run was admitted
 * under, the input still decoding, the run under
 * this instance's policy bundle, not sealed).
 */
import { Effect, Option, Schema } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import type { Json } from "../../domain/Json.js"
import * as Run from "../../domain/Run.js"
import { PlanContract, RunClosed, UnknownVersion } from "../../errors/RuntimeError.js"
import * as History from "../History.js"
import * as Observability from "../Observability.js"
import { type Any as AnyDefinition, DEFAULT_VERSION, type Registered } from "../RunDefinition.js"
import type { EngineState } from "./EngineState.js"

/** The outcomes after which a run takes no more work. */
export const SEALED: ReadonlySet<string> = new Set(["succeeded", "quarantined", "cancelled", "compensated", "swept"])

type Admitted = Extract<Journal.Kind, { kind: "RunAdmitted" }>

/** A run's journal, checked: what `loadFrom` gives. */
export interface Loaded {
  readonly history: History.History
  readonly entry: Registered
  readonly input: unknown
  readonly budget: Run.Budget
  readonly admittedAt: number
  readonly admitted: Admitted
}

/** The `governed_by` identity a principal names: `name@version`, or nothing. */
export const governor = (admitted: Admitted): string =>
  admitted.governed_by === undefined ? "" : `${admitted.governed_by.name}@${admitted.governed_by.version}`

/**
 * A run goes on only under the bundle it was admitted under (§7.12): its next effects would
 * otherwise be decided by another policy. Every resume checks it, a wake-up's included.
 */
export const sameBundle = (state: EngineState, run: RunId, admitted: Admitted) =>
  admitted.policy_bundle === state.bundle
    ? Effect.void
    : Effect.fail(
        new PlanContract({
          detail: `run ${run} was admitted under policy bundle ${admitted.policy_bundle}, this runtime runs ${state.bundle} (${state.policy.bundle.source})`,
        }),
      )

/** The definition as registered here, or `PlanContract` when another (or none) is. */
export const registered = (state: EngineState, def: AnyDefinition) =>
  Effect.flatMap(state.registry.lookup(def.capability), (entry) =>
    Option.isSome(entry) && entry.value.definition === def
      ? Effect.succeed(entry.value)
      : Effect.fail(new PlanContract({ detail: `run ${def.capability} is not registered with this runtime` })),
  )

/** The journal and registered definition of a run, checked for what resume and replay need. */
export const load = <const P extends boolean = false>(state: EngineState, run: RunId, pinned?: P) =>
  Effect.flatMap(state.journal.read(run, 1), (records) => loadFrom(state, run, records, pinned))

/**
 * `load` over records already read. `pinned` (resume, a wake-up): the run goes on only under the
 * version of its definition it was admitted under, else `UnknownVersion`. A Strict replay is not
 * pinned: it writes nothing, and what it reports of another version's code is the replay gate's
 * to judge.
 */
export const loadFrom = <const P extends boolean = false>(
  state: EngineState,
  run: RunId,
  records: ReadonlyArray<Journal.Record>,
  pinned?: P,
): Effect.Effect<Loaded, PlanContract | (P extends true ? UnknownVersion : never)> =>
  Effect.gen(function* () {
    const history = History.build(records)
    if (Option.isNone(history.admitted) || Option.isNone(history.frozen)) {
      return yield* new PlanContract({ detail: `run ${run} has no admission in its journal` })
    }
    const admitted = history.admitted.value
    const entry = yield* state.registry.lookup(admitted.capability)
    if (Option.isNone(entry)) {
      return yield* new PlanContract({ detail: `no definition of ${admitted.capability} is registered here` })
    }
    const def = entry.value.definition
    // A run goes on only under the version of its definition it was admitted under (§7.13). A
    // journal from before versions were recorded holds none: its code declared none either, which
    // is the default version.
    const version = admitted.definition_version ?? DEFAULT_VERSION
    if (pinned === true && version !== def.version) {
      const refused = { run, name: admitted.capability, version, registered: def.version }
      Observability.unknownVersion()
      yield* Observability.logUnknownVersion(refused)
      return yield* new UnknownVersion(refused)
    }
    const input = yield* Effect.mapError(
      Schema.decodeUnknown(def.input)(admitted.input),
      (e) => new PlanContract({ detail: `the journaled input no longer decodes: ${e.message}` }),
    )
    const plan = history.frozen.value.plan as { readonly budget?: Json; readonly admitted_at?: number }
    const budget =
      Run.budgetFromJson(Option.getOrElse(history.raised, () => plan.budget ?? {})) ??
      (yield* new PlanContract({ detail: `run ${run}: its journaled budget does not decode` }))
    return { history, entry: entry.value, input, budget, admittedAt: plan.admitted_at ?? 0, admitted } satisfies Loaded
  }) as Effect.Effect<Loaded, PlanContract | (P extends true ? UnknownVersion : never)>

/** `RunClosed` for a sealed run. */
export const refuseSealed = (run: RunId, history: History.History) =>
  Option.match(history.concluded, {
    onNone: () => Effect.void,
    onSome: (c) => (SEALED.has(c.outcome) ? Effect.fail(new RunClosed({ run, outcome: c.outcome })) : Effect.void),
  })
