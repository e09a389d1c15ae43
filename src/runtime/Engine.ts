/**
 * The runtime's entry points: admission in the order of §7.4, resume, strict replay, cancel and
 * raise, and the wake-ups that resume a waiting run (a fired timer's here; an event's and a task
 * decision's through `Deliveries`). One engine state is built per runtime; each entry point is a
 * flow over it, in a module of its own under `engine/`.
 */
import { Effect, FiberSet, type Option } from "effect"
import type { RunId } from "../domain/Ids.js"
import type * as Journal from "../domain/Journal.js"
import type * as Run from "../domain/Run.js"
import type * as Admission from "./Admission.js"
import * as Deliveries from "./Deliveries.js"
import { admit, onceKey } from "./engine/Admit.js"
import { cancel } from "./engine/Cancel.js"
import * as EngineState from "./engine/EngineState.js"
import { fireTimers } from "./engine/FireTimers.js"
import { replay, replayRecords } from "./engine/Replay.js"
import { raiseBudget, resume } from "./engine/Resume.js"
import type { RunDefinition } from "./RunDefinition.js"
import type { Options } from "./RuntimeOptions.js"

export const make = (options: Options) =>
  Effect.map(EngineState.make(options), (state) => ({
    admit: <I, O, R>(
      def: RunDefinition<I, O, R>,
      input: Run.Labeled<I>,
      binding: Admission.Binding,
      admissionKey: Option.Option<string>,
    ) => admit(state, def, input, binding, admissionKey),
    onceKey,
    ...Deliveries.make(state),
    resume: (run: RunId) => resume(state, run),
    replay: (run: RunId) => replay(state, run),
    replayRecords: (run: RunId, records: ReadonlyArray<Journal.Record>) => replayRecords(state, run, records),
    cancel: (run: RunId, actor: string, reason: string) => cancel(state, run, actor, reason),
    raiseBudget: (run: RunId, input: Run.BudgetInput) => raiseBudget(state, run, input),
    fireTimers: (now: number, limit: number) => fireTimers(state, now, limit),
    idle: FiberSet.awaitEmpty(state.background),
  }))
