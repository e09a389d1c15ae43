/**
 * Cancellation (§7.3): the request is stored; a suspended run is at a step boundary (§7.11), so
 * it is resumed at once, in the background, to honour it at its wait. A run that is executing
 * finds the request at its next boundary; one whose lease is live elsewhere is left to its owner.
 */
import { Effect, FiberSet, Option } from "effect"
import type { RunId } from "../../domain/Ids.js"
import { Tenant } from "../../domain/Tenant.js"
import { RunClosed } from "../../errors/RuntimeError.js"
import * as History from "../History.js"
import type { EngineState } from "./EngineState.js"
import { SEALED } from "./Load.js"
import { resume } from "./Resume.js"

export const cancel = (state: EngineState, run: RunId, actor: string, reason: string) =>
  Effect.gen(function* () {
    const { journal } = state
    // A sealed run has nothing left to cancel: saying the request was taken would be a lie.
    const before = yield* journal.read(run, 1)
    const concluded = History.build(before).concluded
    if (Option.isSome(concluded) && SEALED.has(concluded.value.outcome)) {
      return yield* new RunClosed({ run, outcome: concluded.value.outcome })
    }
    const stored = yield* journal.requestCancel(run, actor, reason)
    const records = yield* Effect.orElseSucceed(journal.read(run, 1), () => [])
    const last = records[records.length - 1]
    if (last?.kind.kind === "RunSuspended") {
      const tenant = yield* Tenant
      yield* FiberSet.run(
        state.background,
        resume(state, run).pipe(
          Effect.tapErrorCause((cause) => Effect.logDebug("agentplane.run.cancel_resume_skipped", cause)),
          Effect.ignore,
          state.wakers.withPermits(1),
          Effect.provideService(Tenant, tenant),
        ),
      )
    }
    return stored
  })
