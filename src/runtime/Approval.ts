/**
 * Approval as policy (§7.12): an effect the policy answers `RequireApproval` for becomes a
 * four-eyes task, and the step waits on it before the effect is announced. Approved, the effect
 * goes on to its announcement; refused, or decided by the window's closing, it is a `PolicyDenied`
 * like any refusal, and nothing acts.
 *
 * - The task is the worklist's own (`Worklist.task`), at a slot of its own beside the effect's
 *   (`APPROVAL_ORDINALS` past it), so its wait is journaled like any wait: a run suspends on it and
 *   a decision wakes it.
 * - Decision: the policy's answer is journaled before the wait as a `Note` keyed by the effect's
 *   key, its text `{"approval": roles, "reason": …}`: the task's identity depends on the roles, so
 *   a replay needs them, and reads them there instead of asking the engine again.
 * - Four eyes: the roles are the policy's, and whoever admitted the run is excluded from deciding.
 * - Justification: the effect's kind, its canonical arguments and its outbound label, with the
 *   provenances of the untrusted part as evidence.
 * - Decision: the task is due when the obligation the run registered last falls due (the one its
 *   current work is under); past it the sweeper expires the task, which refuses the effect. A run
 *   with no obligation waits until someone decides. A task needs a case, so a run without one is
 *   refused, saying so.
 */
import { Clock, Effect, Option } from "effect"
import type * as EffectKey from "../domain/EffectKey.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import { Justification, TaskSpec } from "../domain/Task.js"
import { PolicyDenied } from "../errors/PolicyError.js"
import * as Authorise from "./Authorise.js"
import type * as Execution from "./Execution.js"
import type * as Waits from "./Waits.js"
import * as Worklist from "./Worklist.js"

/** How far past an effect's ordinal its approval's slot lies: beyond any step's own count of calls. */
export const APPROVAL_ORDINALS = 1_000_000

/** What the policy asked for: the roles that may approve, and why. */
export interface Wanted {
  readonly roles: ReadonlyArray<string>
  readonly reason: string
}

/** The approval the journal holds for the effect of `key`, if the policy asked for one. */
export const journaled = (exec: Execution.Execution, key: EffectKey.EffectKey): Wanted | undefined => {
  const note = exec.history.approvals.get(key)
  if (note === undefined) return undefined
  try {
    const parsed = JSON.parse(note) as { readonly approval?: unknown; readonly reason?: unknown }
    if (!Array.isArray(parsed.approval) || typeof parsed.reason !== "string") return undefined
    return { roles: parsed.approval.filter((r): r is string => typeof r === "string"), reason: parsed.reason }
  } catch {
    return undefined
  }
}

/**
 * Opens (or replays) the approval task of the effect at `ordinal` and waits for its decision;
 * `undefined` when approved, else the refusal, staged and counted as `Authorise.denied` does.
 * Runs in the step's fiber, which holds the runtime's services (`Driver.fiberExit`).
 */
export const awaitApproval = (
  exec: Execution.Execution,
  at: Execution.At,
  ordinal: number,
  request: Wanted & { readonly action: string; readonly args: Json; readonly key: EffectKey.EffectKey },
  replayed: boolean,
): Effect.Effect<PolicyDenied | undefined, never, Waits.Services> =>
  Effect.gen(function* () {
    // A replayed refusal is the one journaled, answered again without a second record.
    const journaledRefusal = exec.history.denied.get(request.key)
    const refuse = (reason: string) =>
      journaledRefusal !== undefined
        ? Authorise.denied(exec, at, Authorise.fromRecord(journaledRefusal), request.key, true)
        : Authorise.denied(
            exec,
            at,
            new PolicyDenied({ action: request.action, resource: Authorise.resourceText(exec), reason }),
            request.key,
          )
    const wanted = `needs approval by ${request.roles.join(" or ")} (${request.reason})`
    if (Option.isNone(exec.case)) return yield* refuse(`${wanted}, and a run without a case cannot hold the task`)
    if (!replayed) {
      exec.writer.stage(
        Journal.built({
          case: at.case,
          step: at.step,
          phase: at.phase,
          effectKey: Option.some(request.key),
          kind: { kind: "Note", text: JSON.stringify({ approval: request.roles, reason: request.reason }) },
        }),
      )
    }
    const flow = Authorise.flowOf(exec, at)
    const due = exec.obligations[exec.obligations.length - 1]
    const admittedBy = exec.policy.principal.admittedBy
    const spec = new TaskSpec({
      kind: `approve ${request.action}`,
      justification: new Justification({
        summary: `${request.action} ${wanted}`,
        proposedAction: { kind: request.action, args: request.args, outbound_label: flow.label() },
        confidence: Option.none(),
        cost: Option.none(),
        evidence: [...flow.provenances()],
      }),
      candidateRoles: [...request.roles],
      priority: "normal",
      deadline: Option.fromNullable(due?.name),
      onExpiry: "deny",
      escalateTo: [],
      excludedActors: [...new Set([admittedBy, admittedBy.replace(/^(api|operator):/, "")])],
      allowUnattended: false,
    })
    const createdAt = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const services = yield* Effect.context<Waits.Services>()
    const decision = yield* Worklist.task(
      exec,
      at,
      APPROVAL_ORDINALS + ordinal,
      spec,
      { createdAt, dueAt: Option.fromNullable(due?.dueAt) },
      services,
    )
    if (decision.approved) return undefined
    return yield* refuse(`${decision.actor} did not approve it: ${decision.reason}`)
  })
