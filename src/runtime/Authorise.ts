/**
 * Policy in the protocol (§7.12): a declared effect is decided before it is announced, and a
 * refusal is on the record instead of an act.
 *
 * - Live decides; the decision comes before the announcement, so an announced attempt is one the
 *   policy allowed, and a replay that finds the announcement never asks again.
 * - A refusal stages `PolicyDenied` under the attempt's effect key and answers the step a typed
 *   `PolicyDenied`. The record rides with the run's next commit like any outcome: nothing acted,
 *   so there is nothing it must precede. A replay (Resume or Strict) that finds it answers the
 *   same refusal without consulting the engine.
 * - A crash between the decision and the announcement leaves nothing durable: Resume decides again,
 *   under the same bundle (a Resume under another is refused at load).
 * - Denials count against `maxDenials`: one past the ceiling stops the run as Exhausted(denials).
 * - The engine failing to answer is not a decision: nothing is journaled, the run stops failed
 *   (fail closed, resumable), and the next Resume asks again.
 *
 * Decision: the runtime's own effects (the clock, randomness, the run's case and obligations,
 * waits, tasks) are not put to the policy. They are the runtime's machinery on the run's own case,
 * and a policy that had to permit `clock.now` to let anything run would be noise; what reaches the
 * world is the declared kinds (tools, models, a refund), and those are decided.
 *
 * `RequireApproval` turns the effect into a four-eyes task the step waits on (`Approval`); a group
 * (`cx.all`) or a release cannot wait on a person, so there it is refused, saying so.
 */
import { Effect, Option } from "effect"
import * as Canonical from "../domain/Canonical.js"
import * as Digest from "../domain/Digest.js"
import * as EffectKey from "../domain/EffectKey.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import { Context, PolicyRequest, Principal, type Resource } from "../domain/PolicyRequest.js"
import { PolicyDenied } from "../errors/PolicyError.js"
import * as Execution from "./Execution.js"
import * as Flow from "./Flow.js"
import * as Observability from "./Observability.js"

/** The run's principal: its capability, its governing identity, its tenant and who admitted it. */
export const principal = (fields: {
  readonly capability: string
  readonly governedBy: string
  readonly tenant: string
  readonly admittedBy: string
}): Principal =>
  // Every field is the runtime's own, already checked where it came from.
  new Principal({ ...fields, tenant: fields.tenant as Principal["tenant"], roles: [] }, true)

/**
 * Starts the flow of a step's body (or compensation): it has received the run's input, under its
 * admission label, and the outputs of `steps` (a compensation gets its step's), each with the
 * join of the step that answered it.
 */
export const startFlow = (exec: Execution.Execution, at: Execution.At, steps: ReadonlyArray<number> = []): void => {
  const flow = Flow.make()
  const label = exec.policy.principal.admittedBy
  flow.receive(exec.input, Flow.inputProvenance(label), Flow.admissionLabel(label))
  for (const step of steps) receiveOutputOf(exec, flow, step, exec.outputs.get(step))
  exec.flows.set(`${at.phase}/${at.step}`, flow)
}

/** The step at `step` (forward) answered `output`; whoever reads it receives that step's join. */
export const receiveStepOutput = (exec: Execution.Execution, at: Execution.At, step: number, output: unknown): void =>
  receiveOutputOf(exec, flowOf(exec, at), step, output)

/** The flow of the step at `at`, made on first use: what it has received in this execution. */
export const flowOf = (exec: Execution.Execution, at: Execution.At): Flow.Flow => {
  const key = `${at.phase}/${at.step}`
  let flow = exec.flows.get(key)
  if (flow === undefined) {
    flow = Flow.make()
    exec.flows.set(key, flow)
  }
  return flow
}

/** `case:<id>` when the run has a case, else `run:<id>`: how a record names the resource. */
export const resourceText = (exec: Execution.Execution): string =>
  Option.match(exec.case, { onNone: () => `run:${exec.run}`, onSome: (c) => `case:${c}` })

/** The policy wants a person to approve the effect first (`Approval`). */
export interface ApprovalWanted {
  readonly _tag: "ApprovalWanted"
  readonly roles: ReadonlyArray<string>
  readonly reason: string
}

/**
 * Decides one effect before its announcement; `undefined` is Allow. A refusal is staged and
 * counted here, and answered as the error the step receives; an approval is the caller's to
 * wait for.
 */
export const decide = (
  exec: Execution.Execution,
  at: Execution.At,
  action: string,
  mutates: boolean,
  args: Json,
  key: EffectKey.EffectKey | undefined,
): Effect.Effect<PolicyDenied | ApprovalWanted | undefined> => {
  if (exec.policy.allowsAll) return Effect.succeed(undefined)
  const flow = flowOf(exec, at)
  const resource: Resource = Option.match(exec.case, {
    onNone: () => ({ _tag: "Run" as const, id: exec.run as string }),
    onSome: (c) => ({ _tag: "Case" as const, id: c as string }),
  })
  const request = new PolicyRequest(
    {
      principal: exec.policy.principal,
      action,
      resource,
      context: new Context(
        { mutates, phase: at.phase, args, label: flow.label(), provenances: flow.provenances() },
        true,
      ),
    },
    true,
  )
  return exec.policy.decide(request).pipe(
    Effect.catchAll((error) =>
      Execution.halt(exec, Execution.Stop.Contract({ detail: `${error.message}; nothing was performed` })),
    ),
    Effect.flatMap((decision): Effect.Effect<PolicyDenied | ApprovalWanted | undefined> => {
      if (decision._tag === "Allow") {
        return exec.crash("after_decide", action, 1)
          ? Execution.halt(exec, Execution.Stop.Crash({ point: "after_decide" }))
          : Effect.succeed(undefined)
      }
      if (decision._tag === "RequireApproval") {
        return Effect.succeed({ _tag: "ApprovalWanted", roles: decision.roles, reason: decision.reason })
      }
      return denied(exec, at, new PolicyDenied({ action, resource: resourceText(exec), reason: decision.reason }), key)
    }),
  )
}

/**
 * A refusal, decided now or read back from the journal (`replayed`): staged when new, counted
 * against `maxDenials` either way, so a replay stops where the original stopped.
 */
export const denied = (
  exec: Execution.Execution,
  at: Execution.At,
  refusal: PolicyDenied,
  key: EffectKey.EffectKey | undefined,
  replayed = false,
): Effect.Effect<PolicyDenied> =>
  Effect.suspend(() => {
    if (!replayed) {
      exec.writer.stage(
        Journal.built({
          case: at.case,
          step: at.step,
          phase: at.phase,
          effectKey: Option.fromNullable(key),
          kind: { kind: "PolicyDenied", reason: refusal.reason, action: refusal.action, resource: refusal.resource },
        }),
      )
      Observability.denied(refusal.action)
    }
    exec.usage.denials += 1
    const ceiling = exec.budget.maxDenials
    if (at.phase === "forward" && Option.isSome(ceiling) && exec.usage.denials > ceiling.value) {
      return Execution.halt(exec, Execution.Stop.Exhaust({ limit: "denials", used: exec.usage.denials }))
    }
    return Effect.succeed(refusal)
  })

/** The action a release is decided under (§7.12). */
export const RELEASE = "agentplane.release"

/**
 * `cx.release(value, reason)`: declassifies `value` for the rest of the step, if policy allows
 * (action `agentplane.release`; the context's args are the reason, the value's digest and the
 * provenances released). Keyed by its slot like an effect, so a replay finds its `Released` (or its
 * refusal) and asks no engine.
 */
export const release = (
  exec: Execution.Execution,
  at: Execution.At,
  ordinal: number,
  value: unknown,
  reason: string,
): Effect.Effect<void, PolicyDenied> =>
  Effect.suspend(() => {
    const flow = flowOf(exec, at)
    const digest = valueDigest(value)
    const key = EffectKey.derive({
      step: at.step,
      phase: at.phase,
      ordinal,
      attempt: 1,
      kind: RELEASE,
      args: { reason, value_digest: digest },
    })
    const refused = exec.history.denied.get(key)
    if (refused !== undefined) return Effect.flatMap(denied(exec, at, fromRecord(refused), key, true), Effect.fail)
    if (exec.history.released.has(key)) {
      flow.release(value, sameValue)
      return Effect.void
    }
    if (exec.mode === "strict") {
      return Execution.halt(exec, Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }))
    }
    const labels = flow.releasable(value, sameValue)
    return Effect.flatMap(
      decide(exec, at, RELEASE, false, { reason, value_digest: digest, labels: [...labels] }, key),
      (verdict) => {
        // A release does not wait for a person: one the policy wants approved is refused, saying so.
        if (verdict?._tag === "ApprovalWanted") {
          const reason = `needs approval by ${verdict.roles.join(" or ")} (${verdict.reason}); a release does not wait for a task`
          return Effect.flatMap(
            denied(exec, at, new PolicyDenied({ action: RELEASE, resource: resourceText(exec), reason }), key),
            Effect.fail,
          )
        }
        if (verdict !== undefined) return Effect.fail(verdict)
        flow.release(value, sameValue)
        exec.writer.stage(
          Journal.built({
            case: at.case,
            step: at.step,
            phase: at.phase,
            effectKey: Option.some(key),
            kind: {
              kind: "Released",
              releaser: exec.policy.principal.capability,
              release: reason,
              labels: [...labels],
              value_digest: digest,
            },
          }),
        )
        return Effect.void
      },
    )
  })

/** The refusal the journal holds for `record`, as the step received it. */
export const fromRecord = (record: Extract<Journal.Kind, { kind: "PolicyDenied" }>): PolicyDenied =>
  new PolicyDenied({ action: record.action, resource: record.resource, reason: record.reason })

// internal

const receiveOutputOf = (exec: Execution.Execution, flow: Flow.Flow, step: number, output: unknown): void => {
  const source = exec.flows.get(`forward/${step}`)
  if (source === undefined || source.label() === "trusted") {
    flow.receive(output, `step:${step}`, "trusted")
    return
  }
  for (const provenance of source.provenances()) flow.receive(output, provenance, "untrusted")
}

/** The digest a `Released` record names its value by: of its canonical JSON, else of its text. */
const valueDigest = (value: unknown): string => {
  const text = canonicalOf(value)
  return Digest.of(text ?? String(value))
}

const canonicalOf = (value: unknown): string | undefined => {
  try {
    return Canonical.text(value as Json)
  } catch {
    return undefined
  }
}

/** Two values are the same for a release when their canonical JSON is: an answer the step copied is still that answer. */
const sameValue = (a: unknown, b: unknown): boolean => {
  if (typeof a !== "object" && typeof b !== "object") return false
  const ta = canonicalOf(a)
  return ta !== undefined && ta === canonicalOf(b)
}
