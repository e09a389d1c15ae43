/**
 * The `--runs` module the two-instance test serves: one definition whose runs charge, wait for an
 * event, a reviewer's decision or an instant (by `input.wait`), then settle. Both acts are
 * mutating and `Idempotent`, and each call appends a line to the file `WORKLOAD_ACTS` names,
 * outside the journal, so what reached the "provider" survives `kill -9` and both processes'
 * calls land in one place: an act sent again after a crash carries the same idempotency key, so
 * the provider applies it once.
 *
 * A process started with `WORKLOAD_HANG=1` never finishes the settle act of a run whose input has
 * `hang`: it dies inside the act when the test kills it, with the act announced and not recorded.
 */
import { appendFileSync } from "node:fs"
import { Effect, Option, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Run from "../../src/domain/Run.js"
import { Justification, TaskSpec } from "../../src/domain/Task.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"

export const Wait = Schema.Literal("event", "task", "timer")
export type Wait = typeof Wait.Type

export const Input = Schema.Struct({
  id: Schema.String,
  wait: Wait,
  /** For `timer`: the instant to sleep until, whole seconds. */
  until: Schema.Int,
  /** Whether a `WORKLOAD_HANG` process hangs inside this run's settle act. */
  hang: Schema.Boolean,
})
export type Input = typeof Input.Type

export const CAPABILITY = "workload.wait"
export const CASE_KIND = "workload"
export const EVENT_KIND = "workload.go"
/** The correlation key of run `id`: its case's, and its event's. */
export const keyOf = (id: string) => ({ namespace: "workload", value: id })
/** The actor the task excludes (four eyes): the demo agent. */
export const EXCLUDED = "invoice-bot"

/** One line of the acts file. */
export interface ActLine {
  readonly act: "charge" | "settle"
  readonly run: string
  readonly key: string
  readonly pid: number
  readonly hung: boolean
}

const act = (name: ActLine["act"]) =>
  EffectKind.make({
    kind: `workload.${name}`,
    // The run is in the arguments, so two runs' first attempts never share an idempotency key.
    args: Schema.Struct({ run: Schema.String, hang: Schema.Boolean }),
    success: Schema.Struct({ key: Schema.String }),
    mutates: true,
    recovery: Run.Recovery.Idempotent({ key: Option.none() }),
    act: ({ run, hang }, { idempotencyKey }) =>
      Effect.gen(function* () {
        const hung = name === "settle" && hang && process.env.WORKLOAD_HANG === "1"
        const line: ActLine = { act: name, run, key: idempotencyKey, pid: process.pid, hung }
        appendFileSync(actsFile(), `${JSON.stringify(line)}\n`)
        if (hung) return yield* Effect.never
        return { key: idempotencyKey }
      }),
  })

const charge = act("charge")
const settle = act("settle")

const review = new TaskSpec({
  kind: "workload.approve",
  justification: new Justification({
    summary: "go on",
    proposedAction: { settle: true },
    confidence: Option.none(),
    cost: Option.none(),
    evidence: [],
  }),
  candidateRoles: ["reviewer"],
  priority: "normal",
  deadline: Option.none(),
  onExpiry: "deny",
  escalateTo: [],
  excludedActors: [EXCLUDED],
  allowUnattended: false,
})

export const definition = RunDefinition.make({
  capability: CAPABILITY,
  input: Input,
  // The settle act's answer: the idempotency key the provider applied.
  output: Schema.Struct({ key: Schema.String }),
  plan: [
    Step.make({
      name: "charge",
      body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(charge, { run: cx.run, hang: false })),
    }),
    Step.make({
      name: "wait",
      body: (input: Input) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          if (input.wait === "timer") return yield* cx.sleepUntil(input.until)
          if (input.wait === "task") {
            const decision = yield* cx.task(review)
            if (!decision.approved) return yield* Effect.dieMessage(`run ${input.id} was denied`)
            return
          }
          yield* cx.deadline("go", Deadline.days(3))
          const key = keyOf(input.id)
          yield* cx.awaitEvent({
            kind: EVENT_KIND,
            correlation: [CorrelationKey.make(key.namespace, key.value)],
            deadline: "go",
          })
        }),
    }),
    Step.make({
      name: "settle",
      body: (input: Input) => Effect.flatMap(StepCtx, (cx) => cx.perform(settle, { run: cx.run, hang: input.hang })),
    }),
  ],
})

export default { definitions: [definition] }

// internal

const actsFile = (): string => {
  const file = process.env.WORKLOAD_ACTS
  if (file === undefined || file === "") throw new Error("WORKLOAD_ACTS names no file for the acts")
  return file
}
