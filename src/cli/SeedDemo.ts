/**
 * `agentplane seed-demo`: puts one case with one task waiting for a reviewer into the store, for
 * the README walkthrough. Until the runtime exists nothing else opens tasks, so without this the
 * worklist routes would have nothing to show. It writes through the stores only, and prints
 * shell assignments (`CASE=…`, `TASK=…`) so the walkthrough can `eval` them.
 *
 * Run again, it attaches a new run to the same case (found by its business key) and opens a
 * second task, as a second agent run asking the same question would.
 */
import { Command, Options } from "@effect/cli"
import { Clock, Config, Console, Effect, Option, Schema } from "effect"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import * as EffectKey from "../domain/EffectKey.js"
import { generateRunId, StepId } from "../domain/Ids.js"
import { Justification, Task } from "../domain/Task.js"
import * as TaskId from "../domain/TaskId.js"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { CaseStore } from "../services/CaseStore.js"
import { TaskStore } from "../services/TaskStore.js"
import * as Keys from "./Keys.js"
import * as StoreFlag from "./StoreFlag.js"

/** The agent that proposes the refund; the task excludes it, so it cannot approve itself (four eyes). */
export const AGENT = "invoice-bot"

/** The role the demo task asks for. */
export const REVIEWER_ROLE = "reviewer"

export const INVOICE = CorrelationKey.make("invoice", "INV-2026-0042")

/** `--tenant` names no valid tenant; the message names the value and says why. */
export class TenantInvalid extends Schema.TaggedError<TenantInvalid>()("TenantInvalid", {
  tenant: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `--tenant ${JSON.stringify(this.tenant)} (or AGENTPLANE_TENANT): ${this.detail}`
  }
}

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant to seed (env AGENTPLANE_TENANT); default default"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault("default"),
)

/** Opens (or finds) the demo case, attaches a fresh run, opens its task; returns both ids. */
export const seed = Effect.gen(function* () {
  const cases = yield* CaseStore
  const tasks = yield* TaskStore
  const now = Time.fromMillis(yield* Clock.currentTimeMillis)
  const correlation = yield* cases.correlateOrOpen("invoice-dispute", [INVOICE], now)
  const run = generateRunId()
  yield* cases.attachRun(correlation.case, run)
  yield* cases.setStatus(correlation.case, "awaiting_human")
  const proposedAction = { refund: { invoice: INVOICE.value, amount: 40, currency: "EUR" } }
  const effect = EffectKey.derive({
    step: StepId.make(0),
    phase: "forward",
    ordinal: 0,
    attempt: 1,
    kind: "agentplane.task",
    args: proposedAction,
  })
  const task = yield* tasks.open(
    new Task({
      id: TaskId.derive(run, effect),
      run,
      case: Option.some(correlation.case),
      kind: "approve-refund",
      justification: new Justification({
        summary: `Refund 40 EUR on ${INVOICE.value}: the customer was charged twice`,
        proposedAction,
        confidence: Option.some(0.92),
        cost: Option.some("40 EUR"),
        evidence: ["two captured payments for one order"],
      }),
      candidateRoles: [REVIEWER_ROLE],
      assignee: Option.none(),
      priority: "high",
      state: "open",
      onExpiry: "deny",
      escalateTo: [],
      excludedActors: [AGENT],
      createdAt: now,
      dueAt: Option.none(),
    }),
  )
  return { case: correlation.case, task: task.id }
})

export const command = Command.make("seed-demo", { store: StoreFlag.option, tenant, keying: Keys.options }, (options) =>
  Effect.gen(function* () {
    const tenantId = yield* Effect.mapError(
      Tenant.parse(options.tenant),
      (e) => new TenantInvalid({ tenant: options.tenant, detail: e.message }),
    )
    const ring = yield* Keys.resolve(options.keying, options.store)
    const ids = yield* seed.pipe(
      Effect.provideService(Tenant.Tenant, tenantId),
      Effect.provide(Keys.stores(options.store, StoreFlag.NO_TIMEOUTS, ring)),
    )
    yield* Console.log(`CASE=${ids.case}`)
    yield* Console.log(`TASK=${TaskId.show(ids.task)}`)
  }),
).pipe(
  Command.withDescription(
    "open a demo case with a task waiting for a reviewer, to try the task routes and erase-case on; prints CASE=… and TASK=…",
  ),
)
