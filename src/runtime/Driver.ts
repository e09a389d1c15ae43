/**
 * Drives one execution of a run through its frozen plan (§7.2–§7.3): step boundaries with their
 * cancellation and budget checks, parallel groups, the unwind in reverse completion order, and
 * the conclusion. Live, Resume and Strict share this code; only the writer and the cursor differ.
 */
import { Cause, Context, Effect, Exit, Fiber, Option, Schema, Tracer } from "effect"
import type { EffectKey } from "../domain/EffectKey.js"
import type { StepId } from "../domain/Ids.js"
import { StepId as StepIdSchema } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { Phase } from "../domain/Phase.js"
import * as Run from "../domain/Run.js"
import { JournalStore } from "../services/JournalStore.js"
import * as Authorise from "./Authorise.js"
import * as Execution from "./Execution.js"
import * as Metering from "./Metering.js"
import * as Observability from "./Observability.js"
import * as Patches from "./Patches.js"
import { isGroup } from "./RunDefinition.js"
import type * as Step from "./Step.js"
import * as StepContext from "./StepContext.js"
import * as StepCtx from "./StepCtx.js"
import * as StepEnds from "./StepEnds.js"
import type * as Writer from "./Writer.js"

type Exec = Execution.Execution
export type Needs = StepContext.Needs

/** What an execution came to, before the caller turns stops into errors. */
export interface Verdict {
  readonly status: Run.RunStatus
  readonly stop: Option.Option<Execution.Stop>
}

/** Runs the plan from its first step (replaying what the journal holds) and concludes. */
export const execute = (exec: Exec): Effect.Effect<Verdict, never, Needs> =>
  Effect.gen(function* () {
    const ended = yield* runPlan(exec)
    return yield* conclude(exec, ended)
  }).pipe(Effect.withSpan("agentplane.run", { attributes: { mode: exec.mode }, captureStackTrace: false }))

// internal

type Ended =
  | { readonly _tag: "Done"; readonly output: unknown }
  | { readonly _tag: "Failed"; readonly message: string }
  | { readonly _tag: "Cancelled"; readonly actor: string; readonly reason: string }
  | { readonly _tag: "Stopped"; readonly stop: Execution.Stop }

const stepId = (n: number): StepId => StepIdSchema.make(n)

const at = (exec: Exec, step: number, phase: Phase): Execution.At => ({ step: stepId(step), phase, case: exec.case })

const append = (_exec: Exec, where: Execution.At, kind: Journal.Kind): Journal.Append =>
  Journal.built({ case: where.case, step: where.step, phase: where.phase, effectKey: Option.none(), kind })

/** A step boundary (`StepStarted`, `StepFinished`). */
const boundary = (where: Execution.At, kind: typeof Journal.StepStarted.Type | typeof Journal.StepFinished.Type) =>
  Journal.built({ case: where.case, step: where.step, phase: where.phase, effectKey: Option.none(), kind })

/** Earlier steps' outputs; one read at `where` is received there with the join of the step that answered it (§7.12). */
const prior = (exec: Exec, where?: Execution.At): Step.Prior => ({
  of: (step) => {
    const index = exec.entry.definition.steps.indexOf(step)
    if (!exec.outputs.has(index)) throw new Error(`step ${step.name} has not finished before the step that reads it`)
    if (where !== undefined) Authorise.receiveStepOutput(exec, where, index, exec.outputs.get(index))
    // biome-ignore lint/suspicious/noExplicitAny: the output of the step the caller named
    return exec.outputs.get(index) as any
  },
})

const runPlan = (exec: Exec): Effect.Effect<Ended, never, Needs> =>
  Effect.gen(function* () {
    const def = exec.entry.definition
    let base = 0
    for (const entry of def.plan) {
      const group = isGroup(entry) ? entry : [entry]
      const first = base
      base += group.length
      // Siblings stage their boundaries unguarded, so a guarded one still staged (steps that ran
      // without a commit) is settled first: a refusal of a sibling's commit would drop records of
      // the others, which may be acting.
      if (group.length > 1 && exec.writer.guarded()) {
        const settled = yield* Effect.either(exec.writer.flush())
        if (settled._tag === "Left") return honourOrStop(exec, settled.left)
      }
      // A lone step runs on this fiber: a concurrent `all` of one forks a fiber for it, a
      // wake-up's CPU spent on nothing (its body gets a fiber of its own in `fiberExit`).
      const results =
        group.length === 1
          ? [yield* runStep(exec, first, group[0] as Step.Any, true)]
          : yield* Effect.all(
              group.map((step, i) => runStep(exec, first + i, step, false)),
              { concurrency: "unbounded" },
            )
      // Among parallel siblings the worst wins (§7.2).
      const worst = results.reduce<Ended | undefined>(
        (w, r) => (r === undefined ? w : w === undefined ? r : rank(r) > rank(w) ? r : w),
        undefined,
      )
      if (worst !== undefined) {
        // A failure or cancellation outranks a sibling's pause: the unwind must not stop on it.
        if (worst._tag !== "Stopped" && Option.exists(exec.stop, (s) => Execution.severity(s) < 3)) {
          exec.stop = Option.none()
        }
        return worst
      }
    }
    const output = yield* Effect.try(() => def.finish(exec.input, prior(exec))).pipe(Effect.either)
    if (output._tag === "Left") return { _tag: "Failed", message: `finish: ${String(output.left.error)}` } as const
    return { _tag: "Done", output: output.right } as const
  })

/**
 * A commit refused over a cancellation request (`Writer`): the request is honoured at the guarded
 * boundary the writer named, so the step there and any after it never ran (none acted: their
 * records were not durable) and leave the finished list; any other failure stops the run.
 */
const honourOrStop = (exec: Exec, error: Writer.WriteError): Ended => {
  if (error._tag !== "CancelPending") return stopped(Execution.Stop.Store({ error }))
  const at = exec.writer.honouredAt() ?? 0
  const kept = exec.completed.filter((step) => step < at)
  exec.completed.splice(0, exec.completed.length, ...kept)
  for (const step of [...exec.outputs.keys()]) if (step >= at) exec.outputs.delete(step)
  return { _tag: "Cancelled", actor: error.actor, reason: error.reason }
}

const rank = (e: Ended): number =>
  e._tag === "Stopped" ? Execution.severity(e.stop) : e._tag === "Failed" || e._tag === "Cancelled" ? 3 : 0

/**
 * One forward step; undefined when it finished. A step that runs alone asks the store for a
 * cancellation request in the commit before its first act, not in a read of its own: its
 * boundary is guarded (`Writer.stageGuarded`), and a request found there is honoured at this
 * boundary all the same (nothing of the step has acted). Parallel siblings read at their own
 * boundaries, since one sibling's refused commit must not drop another's records.
 */
const runStep = (
  exec: Exec,
  index: number,
  step: Step.Any,
  alone: boolean,
): Effect.Effect<Ended | undefined, never, Needs> =>
  Effect.gen(function* () {
    const where = at(exec, index, "forward")
    const replaying = exec.history.started.has(index)
    // Cancellation is honoured at a step boundary (§7.3). While replaying, the journal says
    // whether it was; only past the end of history is the store asked.
    // A cancellation journaled inside a step that had started was honoured at one of its waits,
    // which replays it; only one journaled before the step started belongs to this boundary.
    const journaledCancel = replaying ? undefined : exec.history.cancelledAt.get(index)
    if (journaledCancel !== undefined) {
      exec.writer.stage(append(exec, where, journaledCancel))
      return { _tag: "Cancelled", actor: journaledCancel.actor, reason: journaledCancel.reason } as const
    }
    if (!replaying) {
      if (exec.mode === "strict") return stopped(Execution.Stop.Overrun({ seq: exec.history.head.seq + 1 }))
      if (!alone) {
        const request = yield* Effect.flatMap(JournalStore, (j) => j.cancellation(exec.run)).pipe(Effect.either)
        if (request._tag === "Left") return stopped(Execution.Stop.Store({ error: request.left }))
        if (Option.isSome(request.right)) {
          const { actor, reason } = request.right.value
          exec.writer.stage(append(exec, where, { kind: "RunCancelled", actor, reason }))
          return { _tag: "Cancelled", actor, reason } as const
        }
      }
      const refused = yield* inFiber(exec, Metering.checkBudget(exec, where, "step"))
      if (refused !== undefined) return refused
    }
    exec.usage.steps += 1
    const started = boundary(where, { kind: "StepStarted", skill: step.name })
    if (alone && !replaying) exec.writer.stageGuarded(started)
    else exec.writer.stage(started)
    Authorise.startFlow(exec, where)
    const exit = yield* fiberExit(exec, step.body(exec.input, prior(exec, where)), where)
    // A sibling's pause (exhaustion, a wait) does not hide this step's own failure, which ranks
    // above it (§7.2); a body interrupted by a stop, or any worse stop, still reports the stop.
    if (Option.isSome(exec.stop) && (Exit.isSuccess(exit) || !outranks(exit.cause, exec.stop.value))) {
      return stopped(exec.stop.value)
    }
    if (Exit.isSuccess(exit)) {
      const skipped = replaying ? StepEnds.unreached(exec, where.step) : undefined
      if (skipped !== undefined) {
        // Kept on the execution as a halt keeps its stop, so a Strict replay reports the divergence.
        exec.stop = Option.some(skipped)
        return stopped(skipped)
      }
      exec.writer.stage(boundary(where, { kind: "StepFinished", outcome: "succeeded" }))
      exec.outputs.set(index, exit.value)
      exec.completed.push(index)
      return undefined
    }
    exec.writer.stage(boundary(where, { kind: "StepFinished", outcome: "failed" }))
    return { _tag: "Failed", message: `step ${step.name}: ${failureMessage(exit.cause)}` } as const
  })

const stopped = (stop: Execution.Stop): Ended => ({ _tag: "Stopped", stop })

/** Whether a body's own failure (not an interruption by a stop) ranks above `stop`, as Failed does above Exhausted and Suspended. */
const outranks = (cause: Cause.Cause<unknown>, stop: Execution.Stop): boolean =>
  !Cause.isInterruptedOnly(cause) && Execution.severity(stop) < 3

/** Runs a runtime check that may halt; the halt is read back as a stop rather than interrupting the driver. */
const inFiber = (exec: Exec, effect: Effect.Effect<void>): Effect.Effect<Ended | undefined> =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    yield* Fiber.await(fiber)
    return Option.isSome(exec.stop) ? stopped(exec.stop.value) : undefined
  })

/**
 * Runs a body or compensation in its own fiber with the step context and the registered
 * services, so a stop interrupts that fiber and the driver reads the verdict from the execution.
 */
const fiberExit = <A, E, R>(
  exec: Exec,
  body: Effect.Effect<A, E, R>,
  where: Execution.At,
): Effect.Effect<Exit.Exit<A, E>, never, Needs> =>
  Effect.gen(function* () {
    // The captured context carries the driver's current span; left in, it would re-parent every
    // span opened inside the step (its acts') to the run, so it is dropped before providing.
    const services = Context.omit(Tracer.ParentSpan)(yield* Effect.context<Needs>()) as Context.Context<Needs>
    const cx = StepContext.make(exec, where, services)
    const provided = body.pipe(
      Effect.withSpan("agentplane.step", {
        attributes: { step: where.step, phase: where.phase },
        captureStackTrace: false,
      }),
      // One provide, not two: each is a scoped swap of the fiber's context (about 25 interpreter
      // steps), and a woken run pays for it on every step it replays.
      Effect.provide(Context.add(Context.merge(exec.entry.context, services), StepCtx.StepCtx, cx)),
    ) as Effect.Effect<A, E>
    const fiber = yield* Effect.fork(provided)
    return yield* Fiber.await(fiber)
  })

const failureMessage = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value
    return e instanceof Error
      ? e.message
      : typeof e === "object" && e !== null && "_tag" in e
        ? String(e._tag)
        : String(e)
  }
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) return defect.value instanceof Error ? defect.value.message : String(defect.value)
  return Cause.pretty(cause)
}

/**
 * Undoes finished steps last-finished-first (§7.3). Completion order is the journal's where it
 * holds the step's `StepFinished`, so a resumed run unwinds in the order the steps really
 * finished, not the order its replay happened to re-finish parallel siblings.
 */
const unwind = (exec: Exec): Effect.Effect<{ readonly compensated: number } | Ended, never, Needs> =>
  Effect.gen(function* () {
    const def = exec.entry.definition
    const live = new Map(exec.completed.map((step, i) => [step, i]))
    const order = [...exec.completed].sort((a, b) => {
      const sa = exec.history.finishedAt.get(a) ?? Number.MAX_SAFE_INTEGER
      const sb = exec.history.finishedAt.get(b) ?? Number.MAX_SAFE_INTEGER
      return sa !== sb ? sa - sb : (live.get(a) ?? 0) - (live.get(b) ?? 0)
    })
    let compensated = 0
    for (const index of order.reverse()) {
      const step = def.steps[index] as Step.Any
      const role = step.role
      if (role._tag === "Pivot") break
      if (role._tag === "Unnecessary") continue
      if (role._tag === "Undeclared") {
        if (exec.history.mutated.has(index) || exec.mutated.has(index)) {
          return stopped(
            Execution.Stop.Quarantine({
              message: `step ${step.name} is Undeclared and its journal shows a mutating effect: the unwind stops there`,
              divergence: Option.none(),
            }),
          )
        }
        continue
      }
      const where = at(exec, index, "compensating")
      Authorise.startFlow(exec, where, [index])
      const exit = yield* fiberExit(exec, role.compensate(exec.outputs.get(index)), where)
      if (Option.isSome(exec.stop)) return stopped(exec.stop.value)
      const outcome = Exit.isSuccess(exit) ? "compensated" : "failed"
      Observability.compensated(outcome)
      exec.writer.stage(
        append(exec, where, {
          kind: "StepCompensated",
          compensation: { step: index, name: step.name },
          outcome,
        }),
      )
      if (Exit.isFailure(exit)) {
        return stopped(
          Execution.Stop.Quarantine({
            message: `compensation of ${step.name} failed, the run is half-unwound: ${failureMessage(exit.cause)}`,
            divergence: Option.none(),
          }),
        )
      }
      compensated += 1
    }
    return { compensated }
  })

const SEALED: ReadonlySet<Journal.RunOutcome> = new Set(["succeeded", "quarantined", "cancelled", "compensated"])

/** Writes the conclusion (§7.11) and seals what the spec seals; Strict writes nothing. */
const conclude = (exec: Exec, ended: Ended): Effect.Effect<Verdict, never, Needs> =>
  Effect.gen(function* () {
    let result: Ended = ended
    if (ended._tag === "Stopped" && ended.stop._tag === "Cancel") {
      // A cancellation met at a wait is a conclusion, not an abort: clear it so the unwind runs.
      result = { _tag: "Cancelled", actor: ended.stop.actor, reason: ended.stop.reason }
      exec.stop = Option.none()
    }
    // An unwind acts (its compensations), so a guarded boundary still staged is settled first;
    // refused, the run is cancelled there, and what it unwinds is what finished before it.
    if ((result._tag === "Failed" || result._tag === "Cancelled") && exec.writer.guarded()) {
      const settled = yield* Effect.either(exec.writer.flush())
      if (settled._tag === "Left") {
        const honoured = honourOrStop(exec, settled.left)
        if (honoured._tag === "Stopped")
          return { status: Run.RunStatus.Failed({ message: "Store" }), stop: Option.some(honoured.stop) }
        result = honoured
      }
    }
    let unwound: { readonly compensated: number } | undefined
    if (result._tag === "Failed" || result._tag === "Cancelled") {
      const u = yield* unwind(exec)
      if ("compensated" in u) unwound = u
      else result = u
    }
    if (result._tag === "Done" && exec.history.unvisited.size > 0) {
      const first = exec.history.unvisited.values().next().value as EffectKey
      const marker = Patches.unreached(exec, first)
      if (marker !== undefined) Observability.divergence()
      const stop = Execution.Stop.Quarantine({
        message:
          marker === undefined
            ? `the definition finished without reaching journaled effect ek:${first}: it no longer reproduces its journal`
            : `the definition finished without reaching journaled marker ${marker.expected.kind} (seq ${marker.seq}, ek:${first}): a marker was removed while the run depends on it`,
        divergence: Option.fromNullable(marker),
      })
      // Kept on the execution as a halt keeps its stop, so a Strict replay reports the divergence.
      exec.stop = Option.some(stop)
      result = stopped(stop)
    }
    const last = at(exec, Math.max(0, exec.entry.definition.steps.length - 1), "forward")
    const finish = (outcome: Journal.RunOutcome, reason: Option.Option<string>, status: Run.RunStatus) =>
      Effect.gen(function* () {
        exec.writer.conclude(last, outcome, reason)
        if (SEALED.has(outcome)) yield* exec.writer.seal(outcome)
        else yield* exec.writer.flush()
        // A Strict replay concludes nothing: only executions that write count as runs.
        if (exec.mode !== "strict") {
          Observability.concluded(outcome)
          yield* Observability.logConclusion(exec.run, outcome, reason)
        }
        return { status, stop: Option.none<Execution.Stop>() }
      }).pipe(Effect.catchAll((error) => refusedConclusion(exec, error, status)))
    switch (result._tag) {
      case "Done": {
        const encoded = yield* Effect.either(Effect.suspend(() => Effect.asVoid(encodeOutput(exec, result.output))))
        if (encoded._tag === "Left") {
          const message = `the run's output does not match its schema: ${encoded.left}`
          return yield* finish("failed", Option.some(message), Run.RunStatus.Failed({ message }))
        }
        return yield* finish("succeeded", Option.none(), Run.RunStatus.Succeeded({ output: result.output }))
      }
      case "Failed": {
        const compensated = (unwound?.compensated ?? 0) > 0
        return yield* finish(
          compensated ? "compensated" : "failed",
          Option.some(result.message),
          Run.RunStatus.Failed({ message: result.message }),
        )
      }
      case "Cancelled":
        return yield* finish(
          "cancelled",
          Option.some(`cancelled by ${result.actor}: ${result.reason}`),
          Run.RunStatus.Cancelled({ actor: result.actor, reason: result.reason }),
        )
      case "Stopped": {
        const stop = result.stop
        switch (stop._tag) {
          case "Quarantine":
            Observability.quarantined()
            return yield* finish(
              "quarantined",
              Option.some(stop.message),
              Run.RunStatus.Quarantined({ message: stop.message }),
            )
          case "Exhaust":
            Observability.refused(stop.limit)
            exec.writer.stage(append(exec, last, { kind: "BudgetRefused", limit: stop.limit, used: stop.used }))
            return yield* finish(
              "exhausted",
              Option.some(`budget: ${stop.limit}`),
              Run.RunStatus.Exhausted({ limit: stop.limit }),
            )
          case "Contract": {
            const message = `plan contract: ${stop.detail}`
            return yield* finish("failed", Option.some(message), Run.RunStatus.Failed({ message }))
          }
          case "Suspend": {
            // Not a conclusion: the run waits, resumable by whatever answers it (§7.6, §7.8).
            exec.writer.stage(
              append(exec, at(exec, stop.step, "forward"), { kind: "RunSuspended", reason: stop.reason }),
            )
            const status = Run.RunStatus.Suspended({ reason: stop.reason })
            return yield* exec.writer.flush().pipe(
              Effect.as({ status, stop: Option.none<Execution.Stop>() }),
              Effect.catchAll((error) => refusedConclusion(exec, error, status)),
            )
          }
          default:
            // Overrun, a store failure or a crash: nothing more is written; the caller reports it.
            return { status: Run.RunStatus.Failed({ message: stop._tag }), stop: Option.some(stop) }
        }
      }
    }
  })

/**
 * A conclusion's commit that failed: refused over a cancellation request at a guarded boundary
 * (steps that ran without a commit), the run concludes cancelled there instead, unwinding what
 * finished before it; any other failure is the store's, reported as it is.
 */
const refusedConclusion = (
  exec: Exec,
  error: Writer.WriteError,
  status: Run.RunStatus,
): Effect.Effect<Verdict, never, Needs> => {
  const honoured = honourOrStop(exec, error)
  return honoured._tag === "Cancelled"
    ? Effect.suspend(() => conclude(exec, honoured))
    : Effect.succeed({ status, stop: Option.some(Execution.Stop.Store({ error })) })
}

const encodeOutput = (exec: Exec, output: unknown) =>
  Effect.mapError(Schema.encode(exec.entry.definition.output)(output), (e) => e.message)
