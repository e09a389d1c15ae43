/**
 * Strict replay (§7.2): the run's definition driven against its journal, writing nothing and
 * deciding nothing (decisions are read from the journal); the report says whether the journaled
 * outcome was reproduced and, if not, where the definition diverged.
 */
import { Effect, Option } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import type * as Run from "../../domain/Run.js"
import { Tenant } from "../../domain/Tenant.js"
import { ReplayOverrun } from "../../errors/RuntimeError.js"
import * as Driver from "../Driver.js"
import * as Execution from "../Execution.js"
import type * as History from "../History.js"
import * as Observability from "../Observability.js"
import type { ReplayReport } from "../RunResult.js"
import * as Writer from "../Writer.js"
import { type EngineState, policyOf } from "./EngineState.js"
import { type Loaded, load, loadFrom } from "./Load.js"

export const replay = (state: EngineState, run: RunId) =>
  Effect.flatMap(load(state, run), (loaded) => replayLoaded(state, run, loaded))

/** `replay` of records handed in (an export's, `ReplayGate`) instead of the store's. */
export const replayRecords = (state: EngineState, run: RunId, records: ReadonlyArray<Journal.Record>) =>
  Effect.flatMap(loadFrom(state, run, records), (loaded) => replayLoaded(state, run, loaded))

const replayLoaded = (state: EngineState, run: RunId, loaded: Loaded) =>
  Effect.gen(function* () {
    const tenant = yield* Tenant
    const writer = yield* Writer.make({
      mode: "strict",
      run,
      epoch: Option.none(),
      history: loaded.history,
      journal: state.journal,
      tenant,
    })
    const exec = Execution.make({
      run,
      mode: "strict",
      history: loaded.history,
      writer,
      entry: loaded.entry,
      input: loaded.input,
      case: loaded.history.case,
      admittedAt: loaded.admittedAt,
      budget: loaded.budget,
      crash: () => false,
      fake: state.fake,
      // Strict never decides (it reads decisions from the journal), so it needs no engine.
      policy: {
        ...policyOf(state, loaded.entry.definition.capability, tenant, loaded.admitted.input_label),
        decide: () => Effect.dieMessage("a strict replay consulted the policy engine"),
      },
    })
    const verdict = yield* Driver.execute(exec).pipe(Effect.provide(state.services))
    const journaled = Option.map(loaded.history.concluded, (c) => c.outcome)
    // The execution's own stop, not the verdict's: a quarantine concludes (in Strict, writing
    // nothing), so the verdict carries no stop and the diff would be lost.
    const divergence = Option.flatMap(exec.stop, (s) => (s._tag === "Quarantine" ? s.divergence : Option.none()))
    if (Option.isSome(verdict.stop) && verdict.stop.value._tag === "Overrun") {
      return yield* new ReplayOverrun({ run, seq: verdict.stop.value.seq })
    }
    const reached = outcomeOf(verdict.status, loaded.history)
    const reproduced =
      Option.isNone(divergence) && Option.isNone(verdict.stop) && Option.getOrUndefined(journaled) === reached
    if (!reproduced) Observability.notReproduced()
    return { run, reproduced, status: verdict.status, divergence, journaled } satisfies ReplayReport
  })

/** The conclusion a status stands for, given the journal (a failed run that compensated concludes `compensated`). */
const outcomeOf = (status: Run.RunStatus, history: History.History): Journal.RunOutcome => {
  switch (status._tag) {
    case "Succeeded":
      return "succeeded"
    case "Failed": {
      const compensated = history.records.some(
        (r) => r.kind.kind === "StepCompensated" && r.kind.outcome === "compensated",
      )
      return compensated ? "compensated" : "failed"
    }
    case "Cancelled":
      return "cancelled"
    case "Quarantined":
      return "quarantined"
    case "Exhausted":
      return "exhausted"
    default:
      return "failed"
  }
}
