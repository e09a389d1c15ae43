/**
 * Resume (§7.2): a run that is not sealed, under this instance's policy bundle, goes on from its
 * journal under a new lease; a raised budget is journaled (`BudgetReadmitted`) first. A wake-up
 * resumes through `resumeLoaded` with its answer staged for the run's first commit.
 */
import { Effect, Option } from "effect"
import { type Epoch, type RunId, StepId } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import * as Run from "../../domain/Run.js"
import { Tenant } from "../../domain/Tenant.js"
import { InvalidBudget } from "../../errors/RuntimeError.js"
import * as Execution from "../Execution.js"
import type { Registered } from "../RunDefinition.js"
import type { Staged, Woken } from "../Wakeup.js"
import * as Writer from "../Writer.js"
import { drive, result } from "./Drive.js"
import { type EngineState, policyOf } from "./EngineState.js"
import { governor, type Loaded, load, refuseSealed, sameBundle } from "./Load.js"

/** Drives a loaded run under the lease `epoch`; `woken`: the wake-up it resumes for, whose answer rides with its first commit. */
export const resumeLoaded = (
  state: EngineState,
  run: RunId,
  loaded: Loaded,
  epoch: Epoch,
  entry: Registered,
  woken?: Woken & { readonly answer: Option.Option<Staged> },
) =>
  Effect.gen(function* () {
    const answer = woken === undefined ? Option.none<Staged>() : woken.answer
    const tenant = yield* Tenant
    const writer = yield* Writer.make({
      mode: "resume",
      run,
      epoch: Option.some(epoch),
      history: loaded.history,
      ...(Option.isSome(answer) ? { staged: { appends: [answer.value.append], head: answer.value.head } } : {}),
      ...(woken === undefined ? {} : { release: woken.release }),
      ...(woken?.settled === undefined ? {} : { onFirstCommit: () => woken.settled?.(true) }),
      journal: state.journal,
      tenant,
    })
    const exec = Execution.make({
      run,
      mode: "resume",
      history: loaded.history,
      writer,
      entry,
      input: loaded.input,
      case: loaded.history.case,
      admittedAt: loaded.admittedAt,
      budget: loaded.budget,
      crash: state.crash,
      fake: state.fake,
      policy: policyOf(
        state,
        entry.definition.capability,
        tenant,
        loaded.admitted.input_label,
        governor(loaded.admitted),
      ),
    })
    const status = yield* drive(state, exec, Option.some(epoch), state.quotaOf(tenant), woken)
    return result<unknown>(exec, status)
  })

/** Resumes `run` from its journal; `raise`: a new budget, journaled before it goes on. */
export const resume = (state: EngineState, run: RunId, raise: Option.Option<Run.Budget> = Option.none()) =>
  Effect.gen(function* () {
    const { journal } = state
    const loaded = yield* load(state, run, true)
    yield* refuseSealed(run, loaded.history)
    yield* sameBundle(state, run, loaded.admitted)
    const lease = yield* journal.acquire(run, state.owner, state.ttl)
    if (Option.isSome(raise)) {
      const appended = journal.append(run, lease.epoch, [
        Journal.built({
          case: loaded.history.case,
          step: StepId.make(0),
          phase: "forward",
          effectKey: Option.none(),
          kind: { kind: "BudgetReadmitted", limit: Run.budgetJson(raise.value) },
        }),
      ])
      yield* Effect.tapError(appended, () => Effect.ignore(journal.releaseLease(run, lease.epoch)))
      return yield* resumeLoaded(state, run, { ...loaded, budget: raise.value }, lease.epoch, loaded.entry)
    }
    return yield* resumeLoaded(state, run, loaded, lease.epoch, loaded.entry)
  })

/** Raises an unsealed run's budget and resumes it; a forbidden limit is `InvalidBudget`. */
export const raiseBudget = (state: EngineState, run: RunId, input: Run.BudgetInput) =>
  Effect.gen(function* () {
    const raised = yield* Effect.try({
      try: () => Run.budget(input),
      catch: (e) => (e instanceof InvalidBudget ? e : new InvalidBudget({ limit: String(e) })),
    })
    return yield* resume(state, run, Option.some(raised))
  })
