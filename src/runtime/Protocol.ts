/**
 * The effect protocol (§7.1): announce, act, record, and what recovery does with an effect the
 * journal leaves in doubt. The rules that make "at most once" true live here and nowhere else:
 *
 * - the key is derived from (step, phase, ordinal, attempt, kind, canonical arguments), and a
 *   journaled attempt whose key or kind differs is non-determinism: the run is quarantined;
 * - every announcement, a read's as much as a write's, is durable before its act starts (§7.11),
 *   sharing its commit only with records before it;
 * - an attempt announced but never recorded (or recorded `in_doubt`) is recovered by its
 *   declared `Recovery`: Retry and Idempotent act again under the same announcement (Idempotent
 *   with the same provider key), Reconcile asks the probe, RequiresOperator quarantines and never
 *   acts again.
 */
import { Effect, Option } from "effect"
import * as Digest from "../domain/Digest.js"
import * as EffectKey from "../domain/EffectKey.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import * as JsonDiff from "../domain/JsonDiff.js"
import * as Quota from "../domain/Quota.js"
import * as Run from "../domain/Run.js"
import { PolicyDenied } from "../errors/PolicyError.js"
import { NonDeterminism } from "../errors/RuntimeError.js"
import * as Approval from "./Approval.js"
import * as Attempt from "./Attempt.js"
import * as Authorise from "./Authorise.js"
import type * as EffectKindM from "./EffectKind.js"
import type { Call, EffectKind } from "./EffectKind.js"
import * as Execution from "./Execution.js"
import * as History from "./History.js"
import * as Metering from "./Metering.js"
import * as Observability from "./Observability.js"
import * as StepEnds from "./StepEnds.js"

type Exec = Execution.Execution

/**
 * Performs one effect at `ordinal` of the step; `announced`: the first attempt's announce was
 * already committed with its group (and decided with it). `own`: one of the runtime's own kinds,
 * which policy does not decide (`Authorise`); a declared kind is decided before its announcement
 * and may fail with `PolicyDenied`. `decidedBefore`: its group decided it already (`performAll`).
 */
export const perform = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  kind: EffectKind<A, I, E, R>,
  args: I,
  announced = false,
  own = false,
  decidedBefore = false,
): Effect.Effect<A, E | PolicyDenied, R> =>
  Effect.gen(function* () {
    const argsJson = yield* Attempt.encode(exec, kind.args, args, `arguments of ${kind.kind}`)
    const slot = History.slotOf(at.phase, at.step, ordinal)
    const keyOf = (attempt: number) =>
      EffectKey.derive({ step: at.step, phase: at.phase, ordinal, attempt, kind: kind.kind, args: argsJson })
    if (!own && !announced && !decidedBefore) {
      const refusal = yield* decided(exec, at, slot, ordinal, kind, argsJson, keyOf(1), false)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
    }
    // The provider's dedup key is the same for every attempt of this effect and differs between
    // runs: the effect key alone would be shared by two runs making the same call at the same
    // place of one plan, and a provider would answer the second with the first's result.
    const ownKey = () => Digest.of(`${exec.run}/${keyOf(1)}`)
    const idempotencyKey = Run.Recovery.$match(kind.recovery, {
      Idempotent: ({ key }) => Option.match(key, { onNone: ownKey, onSome: (f) => f(argsJson) }),
      Retry: ownKey,
      Reconcile: ownKey,
      RequiresOperator: ownKey,
    })
    let backoffMs = 0
    let spared = 0
    for (let attempt = 1; ; attempt++) {
      const key = keyOf(attempt)
      const step: Attempt.Step<A> = yield* Option.match(History.attemptAt(exec.history, slot, attempt), {
        onSome: (journaled) => replayed(exec, at, kind, args, key, attempt, idempotencyKey, journaled),
        onNone: () =>
          live(
            exec,
            at,
            ordinal,
            kind,
            args,
            argsJson,
            key,
            attempt,
            idempotencyKey,
            backoffMs,
            announced && attempt === 1,
            own,
          ),
      })
      if (step._tag === "Answer") return step.value
      if (step._tag === "Rejected") return yield* Effect.fail(step.error as E)
      // An attempt a crash interrupted and the probe found never happened used up nothing the
      // provider saw: the next attempt is owed whatever the policy (§7.11), so it does not count.
      if (step.unspent) spared += 1
      if (attempt - spared >= kind.retry.maxAttempts) {
        return yield* Effect.die(new Error(`${kind.kind} failed after ${attempt} attempt(s): ${step.message}`))
      }
      backoffMs = Run.backoffAfter(kind.retry, attempt, step.adviceMs)
      // Replay does not wait: the journal already says the next attempt happened.
      if (exec.mode === "live" || !History.attemptAt(exec.history, slot, attempt + 1).pipe(Option.isSome)) {
        if (backoffMs > 0) yield* Effect.sleep(backoffMs)
      }
    }
  })

/**
 * Performs `calls` concurrently at consecutive ordinals; the live first attempts are announced in
 * one batch, so a group costs one commit before its acts, not one per member. Decision: for the budget (§7.3 "a metered limit can be passed by one
 * operation at most") a group is one operation: it is admitted by one check before any member
 * acts, so it may pass a ceiling by what its members spend together, never by more than one group.
 */
export const performAll = (
  exec: Exec,
  at: Execution.At,
  ordinals: ReadonlyArray<number>,
  calls: ReadonlyArray<Call<unknown, unknown, unknown>>,
): Effect.Effect<Array<unknown>, unknown, unknown> =>
  Effect.gen(function* () {
    // Each member's arguments and first key, computed once for its decision and its announcement.
    const members: Array<{
      readonly call: Call<unknown, unknown, unknown>
      readonly ordinal: number
      readonly argsJson: Json
      readonly key: EffectKey.EffectKey
    }> = []
    for (const [i, call] of calls.entries()) {
      const ordinal = ordinals[i] as number
      const argsJson = yield* Attempt.encode(exec, call.kind.args, call.args, `arguments of ${call.kind.kind}`)
      const key = EffectKey.derive({
        step: at.step,
        phase: at.phase,
        ordinal,
        attempt: 1,
        kind: call.kind.kind,
        args: argsJson,
      })
      members.push({ call, ordinal, argsJson, key })
    }
    // Every member is decided before any is announced; the first refusal (in position order,
    // replayed or new) fails the group with nothing of it announced.
    for (const m of members) {
      const slot = History.slotOf(at.phase, at.step, m.ordinal)
      const refusal = yield* decided(exec, at, slot, m.ordinal, m.call.kind, m.argsJson, m.key, true)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
    }
    const batched = new Set<number>()
    const fresh = members.filter(
      (m) =>
        exec.mode !== "strict" &&
        Option.isNone(History.attemptAt(exec.history, History.slotOf(at.phase, at.step, m.ordinal), 1)),
    )
    if (fresh.length > 1) {
      yield* Metering.checkBudget(
        exec,
        at,
        "effect",
        fresh.reduce((sum, m) => Quota.add(sum, m.call.kind.reserve(m.call.args)), Quota.ZERO),
      )
      const announcements: Array<Journal.Append> = []
      for (const m of fresh) {
        announcements.push(started(at, m.call.kind, m.ordinal, m.argsJson, m.key, 1, 0, outbound(exec, at, false)))
        Metering.count(exec, at, m.call.kind)
        batched.add(m.ordinal)
      }
      yield* Attempt.write(exec, exec.writer.flush(announcements))
      for (const m of fresh) yield* Attempt.crashPoint(exec, "after_announce", m.call.kind.kind, 1)
    }
    return yield* Effect.all(
      // Decided above, each member once: `perform` does not ask again.
      members.map((m) => perform(exec, at, m.ordinal, m.call.kind, m.call.args, batched.has(m.ordinal), false, true)),
      { concurrency: "unbounded" },
    )
  })

/**
 * The policy's answer for the first attempt at `slot` (`undefined`: go on). An approval the journal
 * holds is waited for (or replayed) without asking, a refusal it holds is answered again without
 * asking; an announcement it holds was allowed; only a slot the journal has not reached is decided,
 * and never in Strict. A member of a group (`inGroup`) cannot wait on a person: an approval there is
 * refused.
 */
const decided = (
  exec: Exec,
  at: Execution.At,
  slot: string,
  ordinal: number,
  kind: EffectKindM.Any,
  argsJson: Json,
  key: EffectKey.EffectKey,
  inGroup: boolean,
): Effect.Effect<PolicyDenied | undefined> => {
  // An approval first: a refused one holds its refusal too, and replaying it must walk the task's
  // wait and answer again, or the journal holds an effect the replay never reaches.
  const approval = Approval.journaled(exec, key)
  if (approval !== undefined) return approve(exec, at, ordinal, kind, argsJson, key, approval, true)
  const journaled = exec.history.denied.get(key)
  if (journaled !== undefined) return Authorise.denied(exec, at, Authorise.fromRecord(journaled), key, true)
  if (Option.isSome(History.attemptAt(exec.history, slot, 1))) return Effect.succeed(undefined)
  // Before policy is asked: a step the journal closed asks for nothing new (`StepEnds`).
  const afterEnd = StepEnds.askedAfterEnd(exec, at, { key, kind: kind.kind })
  if (afterEnd !== undefined) return afterEnd
  if (exec.mode === "strict") return Effect.succeed(undefined)
  return Effect.flatMap(Authorise.decide(exec, at, kind.kind, kind.mutates, argsJson, key), (verdict) => {
    if (verdict?._tag !== "ApprovalWanted") return Effect.succeed(verdict)
    if (!inGroup) return approve(exec, at, ordinal, kind, argsJson, key, verdict, false)
    const reason = `needs approval by ${verdict.roles.join(" or ")} (${verdict.reason}); a member of cx.all does not wait for a task`
    return Authorise.denied(
      exec,
      at,
      new PolicyDenied({ action: kind.kind, resource: Authorise.resourceText(exec), reason }),
      key,
    )
  })
}

/** Waits for the approval; the step's fiber holds the runtime's services (`Driver.fiberExit`), which the task needs. */
const approve = (
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  kind: EffectKindM.Any,
  argsJson: Json,
  key: EffectKey.EffectKey,
  wanted: Approval.Wanted,
  replayed: boolean,
): Effect.Effect<PolicyDenied | undefined> =>
  Approval.awaitApproval(
    exec,
    at,
    ordinal,
    { roles: wanted.roles, reason: wanted.reason, action: kind.kind, args: argsJson, key },
    replayed,
  ) as Effect.Effect<PolicyDenied | undefined>

/** The outbound label an announcement journals: the step's join for a declared kind, `internal` for the runtime's own. */
const outbound = (exec: Exec, at: Execution.At, own: boolean): string =>
  own ? "internal" : Authorise.flowOf(exec, at).label()

// internal

const replayed = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  kind: EffectKind<A, I, E, R>,
  args: I,
  key: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
  journaled: History.Attempt,
): Effect.Effect<Attempt.Step<A>, never, R> =>
  Effect.gen(function* () {
    if (journaled.key !== key || journaled.kind !== kind.kind) {
      const diff = journaled.kind === kind.kind ? yield* argsDiff(exec, kind, args, journaled.seq) : Option.none()
      const divergence = new NonDeterminism({
        run: exec.run,
        seq: journaled.seq,
        expected: { key: journaled.key, kind: journaled.kind },
        offered: { key, kind: kind.kind },
        ...Option.match(diff, { onNone: () => ({}), onSome: (d) => ({ diff: d }) }),
      })
      Observability.divergence()
      return yield* Execution.halt(
        exec,
        Execution.Stop.Quarantine({
          message: `${divergence.message} ${Execution.placeOf(exec, at)}`,
          divergence: Option.some(divergence),
        }),
      )
    }
    exec.history.unvisited.delete(journaled.key)
    Metering.count(exec, at, kind)
    Observability.replayedEffect(kind.kind)
    if (Option.isNone(journaled.outcome)) {
      return yield* inDoubt(exec, at, kind, args, key, attempt, idempotencyKey, journaled.seq)
    }
    const outcome = journaled.outcome.value.kind
    switch (outcome.kind) {
      case "EffectDone": {
        const value = yield* Attempt.decode(exec, kind.success, outcome.output, `journaled answer of ${kind.kind}`)
        Metering.meter(exec, at, Attempt.spendOf(outcome.spend), false)
        return Attempt.answer(value)
      }
      case "EffectFailed": {
        if (outcome.permanent) {
          return {
            _tag: "Rejected",
            error: yield* Attempt.decode(exec, kind.error, outcome.error, `rejection of ${kind.kind}`),
          }
        }
        if (outcome.disposition === "in_doubt") {
          return yield* inDoubt(exec, at, kind, args, key, attempt, idempotencyKey, journaled.seq, true)
        }
        return Attempt.again(Attempt.messageOf(outcome.error))
      }
      case "EffectReconciled": {
        if (outcome.disposition === "landed") {
          return Attempt.answer(
            yield* Attempt.decode(exec, kind.success, outcome.output, `reconciled answer of ${kind.kind}`),
          )
        }
        if (outcome.disposition === "did_not_happen") {
          return Attempt.again("the probe found the act did not happen", Option.none(), !journaled.failedFirst)
        }
        return yield* Attempt.quarantine(
          exec,
          at,
          `${kind.kind} ek:${key} stayed in doubt after its probe: ${outcome.detail}`,
        )
      }
      default:
        return yield* Execution.halt(exec, Execution.Stop.Contract({ detail: `unexpected outcome ${outcome.kind}` }))
    }
  })

/**
 * The journal has the announcement and no answer (or an `in_doubt` failure): recover by the
 * kind's declared Recovery. `recorded`: an outcome already exists, so acting again must start a
 * new attempt instead of answering this one.
 */
const inDoubt = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  kind: EffectKind<A, I, E, R>,
  args: I,
  key: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
  seq: number,
  recorded = false,
): Effect.Effect<Attempt.Step<A>, never, R> =>
  Effect.gen(function* () {
    if (exec.mode === "strict") {
      return yield* Execution.halt(exec, Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }))
    }
    switch (kind.recovery._tag) {
      case "RequiresOperator":
        Observability.undecidable()
        return yield* Attempt.quarantine(
          exec,
          at,
          `${kind.kind} ek:${key} (seq ${seq}) is in doubt and its recovery is RequiresOperator: an operator must establish whether it happened; it will not be performed again`,
        )
      case "Reconcile":
        return yield* Attempt.reconcile(exec, at, kind, args, key, attempt, idempotencyKey, !recorded)
      default:
        if (recorded) return Attempt.again(`in doubt at seq ${seq}`)
        return yield* Attempt.actAndRecord(exec, at, kind, args, key, attempt, idempotencyKey)
    }
  })

const live = <A, I, E, R>(
  exec: Exec,
  at: Execution.At,
  ordinal: number,
  kind: EffectKind<A, I, E, R>,
  args: I,
  argsJson: Json,
  key: EffectKey.EffectKey,
  attempt: number,
  idempotencyKey: string,
  backoffMs: number,
  announced: boolean,
  own: boolean,
): Effect.Effect<Attempt.Step<A>, never, R> =>
  Effect.gen(function* () {
    const afterEnd = StepEnds.askedAfterEnd(exec, at, { key, kind: kind.kind })
    if (afterEnd !== undefined) return yield* afterEnd
    if (exec.mode === "strict") {
      return yield* Execution.halt(exec, Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }))
    }
    // A sibling stopped the execution: start no new act, end at this boundary instead.
    if (Option.isSome(exec.stop)) return yield* Effect.interrupt
    if (!announced) {
      yield* Metering.checkBudget(exec, at, "effect", kind.reserve(args))
      const announcement = started(at, kind, ordinal, argsJson, key, attempt, backoffMs, outbound(exec, at, own))
      Metering.count(exec, at, kind)
      // Durable before the act, reads included: a read is usually a model call, costly and slow,
      // and while it runs the run must exist, be visible and be recoverable (§7.11).
      yield* Attempt.write(exec, exec.writer.flush([announcement]))
      yield* Attempt.crashPoint(exec, "after_announce", kind.kind, attempt)
    }
    return yield* Attempt.actAndRecord(exec, at, kind, args, key, attempt, idempotencyKey)
  })

const started = (
  at: Execution.At,
  kind: EffectKindM.Any,
  ordinal: number,
  args: Json,
  key: EffectKey.EffectKey,
  attempt: number,
  backoffMs: number,
  label: string,
): Journal.Append =>
  Journal.built({
    case: at.case,
    step: at.step,
    phase: at.phase,
    effectKey: Option.some(key),
    kind: {
      kind: "EffectStarted",
      descriptor: { kind: kind.kind, ordinal, args },
      recovery: Run.recoveryName(kind.recovery),
      mutates: kind.mutates,
      attempt,
      backoff_ms: backoffMs,
      outbound_label: label,
    },
  })

/** Where the offered arguments first differ from those the announcement at `seq` journaled. */
const argsDiff = <A, I, E, R>(
  exec: Exec,
  kind: EffectKind<A, I, E, R>,
  args: I,
  seq: number,
): Effect.Effect<Option.Option<string>> =>
  Effect.gen(function* () {
    const record = exec.history.records.find((r) => r.seq === seq)
    if (record?.kind.kind !== "EffectStarted") return Option.none()
    const descriptor = record.kind.descriptor
    const journaledArgs =
      typeof descriptor === "object" && descriptor !== null && !Array.isArray(descriptor) && "args" in descriptor
        ? (descriptor as { readonly args: Json }).args
        : null
    const offered = yield* Attempt.encode(exec, kind.args, args, `arguments of ${kind.kind}`)
    return Option.map(JsonDiff.first(journaledArgs, offered), (d) => JsonDiff.render(d))
  })
