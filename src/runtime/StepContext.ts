/**
 * The step context (`cx`) a step body or compensation runs with: every call it offers takes the
 * next ordinal of its step, in the order the body makes them, and goes through the effect
 * protocol, a wait or the worklist; what an answer hands the body is received with its kind's
 * label (§7.12). The driver makes one per step and provides it to the step's fiber.
 */
import { type Context, Effect, Either, Option } from "effect"
import type { Calendar } from "../domain/Calendar.js"
import { Deadline, type DeadlineSpec } from "../domain/Deadline.js"
import * as Journal from "../domain/Journal.js"
import type { TaskId } from "../domain/TaskId.js"
import type { Tenant } from "../domain/Tenant.js"
import { PolicyDenied } from "../errors/PolicyError.js"
import { CaseStore } from "../services/CaseStore.js"
import type { EventStore } from "../services/EventStore.js"
import type { JournalStore } from "../services/JournalStore.js"
import type { TaskStore } from "../services/TaskStore.js"
import type { TimerStore } from "../services/TimerStore.js"
import * as Authorise from "./Authorise.js"
import * as Builtins from "./Builtins.js"
import type * as EffectKind from "./EffectKind.js"
import * as Execution from "./Execution.js"
import * as Flow from "./Flow.js"
import * as Patches from "./Patches.js"
import * as Protocol from "./Protocol.js"
import type * as StepCtx from "./StepCtx.js"
import * as Waits from "./Waits.js"
import * as Worklist from "./Worklist.js"

type Exec = Execution.Execution

/** The runtime's services a step's context hands to builtins, waits and tasks (and the driver provides). */
export type Needs = CaseStore | JournalStore | EventStore | TimerStore | TaskStore | Tenant | Calendar

const append = (where: Execution.At, kind: Journal.Kind): Journal.Append =>
  Journal.built({ case: where.case, step: where.step, phase: where.phase, effectKey: Option.none(), kind })

/** The step context of one step (or compensation): ordinals count from 0 in the order of the body's calls. */
export const make = (exec: Exec, where: Execution.At, services: Context.Context<Needs>): StepCtx.Service => {
  let ordinal = 0
  const next = () => ordinal++
  const flow = Authorise.flowOf(exec, where)
  // What an answer or rejection hands the body is received with its kind's label (§7.12).
  const received = <A, E, R>(kind: string, args: unknown, effect: Effect.Effect<A, E, R>) => {
    const { label, provenance } = Flow.answerOf(kind, args)
    return effect.pipe(
      Effect.tapBoth({
        onSuccess: (a) => Effect.sync(() => flow.receive(a, provenance, label)),
        onFailure: (e) =>
          Effect.sync(() => {
            if (!(e instanceof PolicyDenied)) flow.receive(e, provenance, label)
          }),
      }),
    )
  }
  const perform = <A, I, E, R>(kind: EffectKind.EffectKind<A, I, E, R>, args: I) =>
    received(
      kind.kind,
      args,
      Effect.suspend(() => Protocol.perform(exec, where, next(), kind, args)),
    )
  const builtin = <A, I, E>(kind: EffectKind.EffectKind<A, I, E, Needs>, args: I): Effect.Effect<A, E> =>
    Effect.provide(
      received(
        kind.kind,
        args,
        Effect.suspend(() => Protocol.perform(exec, where, next(), kind, args, false, true)),
      ),
      services,
    ) as Effect.Effect<A, E>
  const needCase = (what: string) =>
    Option.match(exec.case, {
      onNone: () =>
        Execution.halt(exec, Execution.Stop.Contract({ detail: `${what} needs a case, and this run has none` })),
      onSome: Effect.succeed,
    })
  const record = (kind: Journal.Kind) => Effect.sync(() => exec.writer.stage(append(where, kind)))
  const transition = (name: string, to: "met" | "cancelled") =>
    Effect.gen(function* () {
      const id = yield* needCase("a deadline transition")
      const { from } = yield* builtin(Builtins.transitionDeadline, { case: id, name, to })
      yield* record({ kind: "DeadlineTransition", name, from, to })
      return { from }
    })
  const now = builtin(Builtins.clockNow, {})
  // A task is due when the obligation its spec names falls due (§7.7, §7.11); it registers none.
  const dueOf = (what: string, name: Option.Option<string>) =>
    Option.match(name, {
      onNone: () => Effect.succeed(Option.none<number>()),
      onSome: (n) => Effect.map(Waits.obligationDue(exec, where, services, what, n), Option.some),
    })
  const deadline = (name: string, spec: DeadlineSpec, warnBeforeSecs?: number) =>
    Effect.gen(function* () {
      const id = yield* needCase("a deadline")
      const from = yield* now
      const resolved = yield* builtin(Builtins.resolveDeadline, { case: id, from, spec })
      const deadline = new Deadline({
        case: id,
        name,
        resolvedAt: resolved.at,
        calendarDigest: resolved.calendar_digest,
        warnAt: Option.fromNullable(warnBeforeSecs).pipe(
          Option.map((w) => Math.max(0, resolved.at - w) as typeof resolved.at),
        ),
        state: "pending",
      })
      // Resume registers again on purpose: registration keeps the first, so this heals a crash
      // between the resolve and the write. Strict never writes.
      if (exec.mode !== "strict") {
        yield* Effect.flatMap(CaseStore, (cases) => cases.registerDeadline(deadline)).pipe(
          Effect.provide(services),
          Effect.catchAll((error) => Execution.halt(exec, Execution.Stop.Store({ error: error as never }))),
        )
      }
      yield* record({
        kind: "DeadlineRegistered",
        name,
        resolved_at: resolved.at,
        calendar_digest: resolved.calendar_digest,
      })
      exec.obligations.push({ name, dueAt: resolved.at })
      return deadline
    })
  return {
    run: exec.run,
    step: where.step,
    phase: where.phase,
    case: exec.case,
    perform,
    all: ((calls: ReadonlyArray<EffectKind.Call<unknown, unknown, unknown>>) =>
      Effect.suspend(() => {
        const ordinals = calls.map(() => next())
        return Effect.tap(Protocol.performAll(exec, where, ordinals, calls), (answers) =>
          Effect.sync(() =>
            answers.forEach((answer, i) => {
              const call = calls[i] as EffectKind.Call<unknown, unknown, unknown>
              const { label, provenance } = Flow.answerOf(call.kind.kind, call.args)
              flow.receive(answer, provenance, label)
            }),
          ),
        )
      })) as StepCtx.Service["all"],
    now,
    random: builtin(Builtins.randomNext, {}),
    caseState: Effect.flatMap(needCase("cx.caseState"), (id) => builtin(Builtins.readState, { case: id })),
    putCaseState: (expected, state) =>
      Effect.flatMap(needCase("cx.putCaseState"), (id) =>
        Effect.map(builtin(Builtins.writeState, { case: id, expected, state }), (r) => r.version),
      ),
    setCaseStatus: (status) =>
      Effect.flatMap(needCase("cx.setCaseStatus"), (id) =>
        Effect.asVoid(builtin(Builtins.setStatus, { case: id, status })),
      ),
    deadline,
    meetDeadline: (name) => transition(name, "met"),
    cancelDeadline: (name) => transition(name, "cancelled"),
    note: (text) => record({ kind: "Note", text }),
    // A marker's place is the ordinal the next call takes, read without taking it.
    patched: (id) => Effect.suspend(() => Patches.patched(exec, where, ordinal, id)),
    deprecatePatch: (id) => Effect.suspend(() => Patches.deprecate(exec, where, ordinal, id)),
    release: (value, reason) => Effect.suspend(() => Authorise.release(exec, where, next(), value, reason)),
    awaitEvent: (spec) =>
      Effect.tap(
        Effect.suspend(() => Waits.awaitEvent(exec, where, next(), spec, services)),
        (got) => Effect.sync(() => flow.receive(got.payload, Flow.eventProvenance(spec.kind), "untrusted")),
      ),
    sleepUntil: (until) => Effect.suspend(() => Waits.sleepUntil(exec, where, next(), until, services)),
    sleep: (seconds) =>
      Effect.flatMap(now, (from) =>
        Effect.suspend(() => Waits.sleepUntil(exec, where, next(), from + seconds, services)),
      ),
    task: (spec) =>
      Effect.gen(function* () {
        // The wait's slot comes first, as it always has: the task id derives from it.
        const slot = next()
        const createdAt = yield* now
        const dueAt = yield* dueOf(`task ${spec.kind}`, spec.deadline)
        const decision = yield* Worklist.task(exec, where, slot, spec, { createdAt, dueAt }, services)
        flow.receive(decision, Flow.TASK_PROVENANCE, "untrusted")
        return decision
      }),
    openTask: (spec) =>
      Effect.gen(function* () {
        const kase = yield* needCase("cx.openTask")
        const checked = Worklist.checkOpen(spec)
        if (Either.isLeft(checked))
          return yield* Execution.halt(exec, Execution.Stop.Contract({ detail: checked.left }))
        // As in `task`: the effect's slot first, so the id derives from it.
        const slot = next()
        const id = Worklist.identity(exec, where, slot, spec)
        const createdAt = yield* now
        const dueAt = yield* dueOf(`openTask(${spec.kind})`, spec.deadline)
        const args = Worklist.openArgs(id, exec.run, kase, spec, { createdAt, dueAt })
        return yield* Effect.provide(
          Effect.suspend(() => Protocol.perform(exec, where, slot, Worklist.openKind, args, false, true)),
          services,
        ) as Effect.Effect<TaskId>
      }),
  }
}
