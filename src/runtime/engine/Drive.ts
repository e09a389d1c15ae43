/**
 * Drives an execution under its lease, renewing the lease meanwhile, then cleans up as §7.4
 * says: every exit but a test crash releases the lease and the quota slot and accrues spend,
 * best effort, unless the run's durable state says the lease must lapse instead.
 */
import { Effect, Option } from "effect"
import type { Epoch } from "../../domain/Ids.js"
import * as Quota from "../../domain/Quota.js"
import type * as Run from "../../domain/Run.js"
import { Tenant } from "../../domain/Tenant.js"
import * as Driver from "../Driver.js"
import type * as Execution from "../Execution.js"
import { Crashed, type RunResult } from "../RunResult.js"
import type { Woken } from "../Wakeup.js"
import { type EngineState, nowSecs } from "./EngineState.js"

/** Drives `exec` under `epoch` (none in Strict); `woken`: the wake-up whose answer it carries; `opening`: a new run, whose lease its first commit takes. */
export const drive = (
  state: EngineState,
  exec: Execution.Execution,
  epoch: Option.Option<Epoch>,
  quota: Quota.TenantQuota,
  woken?: Woken,
  opening = false,
) =>
  Effect.gen(function* () {
    const { journal, cases, quotas, holdings } = state
    const taken = opening ? () => exec.writer.durable() > 0 : undefined
    const holding = Option.isSome(epoch) ? holdings.hold(exec.run, epoch.value, yield* Tenant, taken) : undefined
    const verdict = yield* Driver.execute(exec).pipe(Effect.ensuring(Effect.sync(() => holdings.unhold(holding))))
    const stop = verdict.stop
    if (Option.isSome(stop) && stop.value._tag === "Crash") {
      return yield* new Crashed({ run: exec.run, point: stop.value.point })
    }
    // A wake-up's answer rides with the run's first commit. If none came (a store failure
    // first), the lease is left to lapse: the recovery pass resumes the run, whose wait finds
    // its answer again, the timer still armed and the event still claimed for it.
    const answerLost = woken !== undefined && woken.staged && exec.writer.durable() === woken.durableSeq
    woken?.settled?.(!answerLost)
    // Any other store failure of a run with a durable journal leaves the lease to lapse too
    // (issue 16 B): the failed write's outcome is unknown (a wait announced but its
    // subscription lost in COMMIT), and released, the run is found by no pass (recovery walks
    // lapsed leases, redelivery walks waits). Lapsed, it is what a process killed at that write
    // leaves, the case the crash battery recovers: the recovery pass resumes the run under a new
    // epoch (fencing any late write of this one) and the resume repeats the write (subscribe +
    // claimFor, arm, open), each idempotent. The quota slot stays held until that resume ends.
    // With nothing durable there is no run to resume: released as before.
    const storeLost = Option.isSome(stop) && stop.value._tag === "Store" && exec.writer.durable() > 0
    if (exec.mode !== "strict" && Option.isSome(epoch) && !answerLost && !storeLost) {
      // The answer is durable: the timer or the claimed event it came from may go. It went
      // already in the commit that made the answer durable, unless the run made none (its
      // answer was journaled before) or a journal wrapper did not carry the release along.
      if (woken !== undefined && !exec.writer.released()) yield* Effect.ignore(woken.release)
      // Best effort: a failed release only delays the next owner until the lease lapses.
      if (Option.isSome(stop) && exec.writer.durable() === 0 && Option.isSome(exec.case)) {
        yield* Effect.ignore(cases.detachRun(exec.case.value, exec.run))
      }
      // A seal released the lease in its own commit; any other stop releases it here, unless
      // the run's opening commit never came (then there is no lease to release).
      const leased = !opening || exec.writer.durable() > 0
      if (!exec.writer.sealed() && leased) yield* Effect.ignore(journal.releaseLease(exec.run, epoch.value))
      // Admission reserves a slot only under a bounded quota, so under an unlimited one there
      // is none to free (a slot taken while the quota was bounded is left: unlimited ignores it).
      if (!Quota.isUnlimited(quota)) yield* Effect.ignore(quotas.release(exec.run))
      if (Quota.boundsSpend(quota) && (exec.liveSpend.tokens > 0 || exec.liveSpend.minorUnits > 0)) {
        const at = yield* nowSecs
        yield* Effect.ignore(quotas.accrue(Quota.periodKey(quota.period, at as never), exec.liveSpend))
      }
    }
    if (Option.isSome(stop)) {
      const s = stop.value
      if (s._tag === "Store") {
        // A guarded batch's refusal is honoured by the protocol as a cancellation, and only an
        // admission opens a run (`Halted`, `LeaseHeld`): neither reaches here otherwise.
        const error = s.error
        if (error._tag === "CancelPending") return yield* Effect.die(error)
        return yield* Effect.fail(error)
      }
      // Only Strict replays past its history, and it does not come through here.
      if (s._tag === "Overrun") return yield* Effect.dieMessage(`run ${exec.run} overran its history outside Strict`)
    }
    return verdict.status
  }).pipe(Effect.provide(state.services))

/** A run's result from its execution and the status it reached. */
export const result = <O>(exec: Execution.Execution, status: Run.RunStatus): RunResult<O> => ({
  run: exec.run,
  case: exec.case,
  status,
  output: status._tag === "Succeeded" ? Option.some(status.output as O) : Option.none(),
})
