/**
 * Runs the HTTP tests drive through the server's runtime: one waits for an event, one asks a
 * reviewer, one is quarantined. Both need a case (a wait's deadline names an obligation of it) and return what
 * answered them, so a test reads the answer from the run's output.
 */
import { Effect, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Run from "../../src/domain/Run.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import type { Runtime } from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Support from "../runtime/Support.js"

const Input = Schema.Struct({ invoice: Schema.String })
type Input = typeof Input.Type

/** Waits for `invoice.paid` with key `("subject", invoice)`, as a CloudEvent's subject gives it. */
export const awaitsPayment = RunDefinition.make({
  capability: "http-test.await",
  // A declared version, so the run view's `definition` shows one that is not the default.
  version: "2026-12-a",
  input: Input,
  output: Schema.Unknown,
  plan: [
    Step.make({
      name: "wait",
      body: (input: Input) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.deadline("payment", Deadline.days(3))
          const got = yield* cx.awaitEvent({
            kind: "invoice.paid",
            correlation: [CorrelationKey.make("subject", input.invoice)],
            deadline: "payment",
          })
          return got.payload
        }),
    }),
  ],
})

/** Asks a reviewer (the agent excluded) and returns the decision. */
export const asksReviewer = RunDefinition.make({
  capability: "http-test.ask",
  input: Input,
  output: Schema.Unknown,
  plan: [
    Step.make({
      name: "ask",
      body: () =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          const decision = yield* cx.task(Support.taskSpec({ excludedActors: ["agent"] }))
          return { approved: decision.approved, actor: decision.actor, reason: decision.reason }
        }),
    }),
  ],
})

/** A mutating act that dies (nobody can say whether it landed) under `RequiresOperator`: the run is quarantined. */
const doomedCharge = Support.acting(
  "http-test.charge",
  { mutates: true, recovery: Run.Recovery.RequiresOperator() },
  () => Effect.die(new Error("the provider hung up mid-request")),
)

/** Charges once and is quarantined: what an operator finds among the runs that need a person. */
export const quarantines = RunDefinition.make({
  capability: "http-test.quarantine",
  input: Input,
  output: Schema.Unknown,
  plan: [
    Step.make({
      name: "charge",
      body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(doomedCharge, { n: 1 })),
    }),
  ],
})

/** Starts `def` for a fresh invoice bound to its case; the run suspends at its wait. */
export const start = (runtime: Runtime["Type"], def: RunDefinition.Any, invoice: string) =>
  runtime.runCorrelated(def, Run.labeled({ invoice }, "test"), "invoice", [CorrelationKey.make("invoice", invoice)])
