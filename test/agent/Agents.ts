/**
 * Agents on `@effect/ai` (issue 19), on every backend: model calls and tool calls are journaled
 * effects, replayed instead of asked again, metered into the budget and the tenant's quota, and
 * recovered after a crash as their kinds declare. The model is the scripted one: every request
 * it answers is counted, so "called once in total" is measured outside the journal.
 */
import { LanguageModel } from "@effect/ai"
import { describe, it } from "@effect/vitest"
import { type Context, Effect, Layer, Option, Schema } from "effect"
import { expect } from "vitest"
import * as Dispute from "../../examples/dispute/Dispute.js"
import * as Conversation from "../../src/agent/Conversation.js"
import * as Model from "../../src/agent/Model.js"
import * as ModelCall from "../../src/agent/ModelCall.js"
import { Price } from "../../src/agent/Price.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import * as ToolCall from "../../src/agent/ToolCall.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Support from "../runtime/Support.js"
import * as Backend from "../support/Backend.js"

type ScriptContext = Context.Context<LanguageModel.LanguageModel | ScriptedModel.Script>
type Tally = { calls: number; readonly refunds: Map<string, string>; readonly keys: Array<string> }

export const usage = { inputTokens: 40, outputTokens: 60 }
const config = (over: Partial<Model.Config> = {}): Model.Config => ({
  model: "scripted-1",
  system: "scripted",
  prices: { "scripted-1": new Price({ inputMinorPerMillion: 100_000, outputMinorPerMillion: 200_000 }) },
  ...over,
})

export const newTally = (): Tally => ({ calls: 0, refunds: new Map(), keys: [] })

/** The payment provider, recording each key it was sent. */
const payments = (tally: Tally) =>
  Layer.succeed(Dispute.Payments, {
    refund: (invoice, amountMinor, idempotencyKey) =>
      Effect.sync(() => {
        tally.calls += 1
        tally.keys.push(idempotencyKey)
        const known = tally.refunds.get(idempotencyKey)
        if (known !== undefined) return { refundId: known }
        const refundId = `re_${invoice}_${amountMinor}`
        tally.refunds.set(idempotencyKey, refundId)
        return { refundId }
      }),
  })

/** A runtime over the backend whose definitions see the script's model, the dispute tool and the payments. */
export const agentRuntime = (
  backend: Backend.Backend,
  defs: ReadonlyArray<RunDefinition.Any>,
  script: ScriptContext,
  tally: Tally,
  options: Runtime.Options = {},
  model: Model.Config = config(),
) =>
  Support.runtime(
    backend,
    defs,
    options,
    Layer.mergeAll(Model.layer(model), Dispute.RefundToolsLive).pipe(
      Layer.provideMerge(Layer.merge(Layer.succeedContext(script), payments(tally))),
    ),
  )

const calls = (script: ScriptContext) =>
  Effect.flatMap(ScriptedModel.Script, (s) => s.calls).pipe(Effect.provide(script))

const Input = Schema.Struct({ n: Schema.Number })

/** A step asking the model `turns` times with `prompt`, answering the texts. */
const asking = (name: string, prompt: string, turns = 1) =>
  Step.make({
    name,
    body: () =>
      Effect.gen(function* () {
        const texts: Array<string> = []
        for (let i = 0; i < turns; i++) {
          const response = yield* LanguageModel.generateText({ prompt: `${prompt} #${i}` }).pipe(
            ModelCall.withJournal,
            Effect.orDie,
          )
          texts.push(response.text)
        }
        return texts
      }),
  })

export const asker = (capability: string, prompt: string, turns = 1, budget: Run.Budget = Run.unlimited) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Array(Schema.String),
    plan: [asking("ask", prompt, turns)],
    budget,
  })

const start = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 0 }, "test")))

const journal = (run: RunId) => Effect.flatMap(JournalStore, (j) => j.read(run, 1))

const disputeInput = (disputedMinor: number, invoice = `INV-${crypto.randomUUID().slice(0, 8)}`): Dispute.Input => ({
  invoice,
  customer: "ACME GmbH",
  complaint: "charged twice for one order",
  disputedMinor,
})

/** The script for one dispute: the proposal, then the tool-call turn, then the confirmation. */
const disputeScript = (action: "refund" | "reject", refundMinor: number, invoice: string) => [
  ScriptedModel.object(
    { category: "duplicate_charge", action, refundMinor, justification: "two captures for one order" },
    usage,
  ),
  ...(action === "refund"
    ? [
        { toolCalls: [{ name: "issue_refund", params: { invoice, amountMinor: refundMinor } }], usage },
        { text: "Refunded.", usage },
      ]
    : []),
]

const startDispute = (input: Dispute.Input) => Effect.flatMap(Runtime.Runtime, (rt) => Dispute.start(rt, input))

/** Decides the one open dispute task as a reviewer. */
const decideOpenTask = (approved: boolean) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore
    const queue = yield* tasks.queue(["reviewer"], 10)
    const task = queue[0]
    if (task === undefined) return yield* Effect.dieMessage("no open task")
    const rt = yield* Runtime.Runtime
    yield* rt.answerTask(
      task.id,
      new Decision({ approved, actor: "alice", reason: "checked the two captures", amendment: null }),
    )
    yield* rt.idle
    return task
  })

export const suite = (backend: Backend.Backend) =>
  describe("agents on @effect/ai", () => {
    it.live("a recorded model call is replayed after a crash: the scripted model is asked once in total", () =>
      Effect.gen(function* () {
        const script = yield* ScriptedModel.make([{ text: "the answer", usage }])
        const tally = newTally()
        const def = asker("agent.crash.replay", "what is it?")
        const crashed = yield* start(def).pipe(
          Effect.flip,
          Support.on(
            agentRuntime(backend, [def], script, tally, {
              leaseTtlSecs: 1,
              crash: TestRuntime.crashAt("after_record", ModelCall.KIND),
            }),
          ),
        )
        expect(crashed).toBeInstanceOf(Runtime.Crashed)
        expect(yield* calls(script)).toBe(1)
        const result = yield* Support.resumeAfterLapse((crashed as Runtime.Crashed).run).pipe(
          Support.on(agentRuntime(backend, [def], script, tally)),
        )
        expect(result.status._tag).toBe("Succeeded")
        expect(Option.getOrThrow(result.output)).toEqual(["the answer"])
        expect(yield* calls(script)).toBe(1)
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a model call's EffectDone records the response, tokens from the usage and money from the price", () =>
      Effect.gen(function* () {
        const script = yield* ScriptedModel.make([{ text: "priced", usage }])
        const def = asker("agent.spend", "price it")
        const result = yield* start(def).pipe(Support.on(agentRuntime(backend, [def], script, newTally())))
        const records = yield* journal(result.run).pipe(Effect.provide(backend.layer))
        const done = Support.ofKind(records, "EffectDone").map((d) => d.kind)
        expect(done).toHaveLength(1)
        // 40 × 100,000 + 60 × 200,000 per million = 4 + 12 minor units; tokens are the total.
        expect(done[0]?.spend).toEqual({ tokens: 100, minor_units: 16 })
        expect(JSON.stringify(done[0]?.output)).toContain("priced")
        const started = Support.ofKind(records, "EffectStarted").map((s) => s.kind)
        expect(started[0]?.descriptor).toMatchObject({ kind: ModelCall.KIND, args: { model: "scripted-1" } })
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a model without a price is metered in tokens only", () =>
      Effect.gen(function* () {
        const script = yield* ScriptedModel.make([{ text: "unpriced", usage }])
        const def = asker("agent.unpriced", "price it")
        const result = yield* start(def).pipe(
          Support.on(agentRuntime(backend, [def], script, newTally(), {}, config({ prices: {} }))),
        )
        const records = yield* journal(result.run).pipe(Effect.provide(backend.layer))
        expect(Support.ofKind(records, "EffectDone").map((d) => d.kind.spend)).toEqual([
          { tokens: 100, minor_units: 0 },
        ])
      }).pipe(Backend.asFreshTenant),
    )

    it.live(
      "maxTokens below the script's spend stops Exhausted before the call that would pass it; raiseBudget finishes it, the spends add up to the quota's period, and a spent period refuses the next admission",
      () =>
        Effect.gen(function* () {
          const script = yield* ScriptedModel.make([
            { text: "one", usage },
            { text: "two", usage },
            { text: "three", usage },
          ])
          const def = asker("agent.budget", "count", 3, Run.budget({ maxTokens: 150 }))
          const quota = new Quota.TenantQuota({
            maxConcurrentRuns: Option.none(),
            maxTokensPerPeriod: Option.some(300),
            maxMinorUnitsPerPeriod: Option.none(),
            period: Quota.DEFAULT_PERIOD,
          })
          const layer = agentRuntime(
            backend,
            [def],
            script,
            newTally(),
            { quota: () => quota },
            config({ maxOutputTokens: 60 }),
          )
          const paused = yield* start(def).pipe(Support.on(layer))
          // 100 tokens spent; the next call may produce 60 more, which would pass 150: refused before it.
          expect(paused.status).toEqual(Run.RunStatus.Exhausted({ limit: "tokens" }))
          expect(yield* calls(script)).toBe(1)
          const raised = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
            rt.raiseBudget(paused.run, { maxTokens: 1_000 }),
          ).pipe(Support.on(layer))
          expect(raised.status._tag).toBe("Succeeded")
          expect(Option.getOrThrow(raised.output)).toEqual(["one", "two", "three"])
          expect(yield* calls(script)).toBe(3)
          const records = yield* journal(paused.run).pipe(Effect.provide(backend.layer))
          const journaled = Support.ofKind(records, "EffectDone").reduce(
            (sum, d) => sum + Number((d.kind.spend as { tokens: number }).tokens),
            0,
          )
          expect(journaled).toBe(300)
          const now = Math.floor(Date.now() / 1000)
          const period = Quota.periodKey(quota.period, now as never)
          const spent = yield* Effect.flatMap(QuotaStore, (q) => q.spent(period)).pipe(Effect.provide(backend.layer))
          expect(spent.tokens).toBe(journaled)
          // The period's 300 tokens are spent: the next admission is refused before anything runs.
          const refused = yield* Effect.flip(start(def).pipe(Support.on(layer)))
          expect(refused._tag).toBe("SpentOut")
          expect(yield* calls(script)).toBe(3)
        }).pipe(Backend.asFreshTenant),
    )

    it.live(
      "changing a recorded call's prompt in the definition quarantines the run on Resume, naming the change",
      () =>
        Effect.gen(function* () {
          const script = yield* ScriptedModel.make([
            { text: "first", usage },
            { text: "second", usage },
          ])
          const before = RunDefinition.make({
            capability: "agent.nondeterminism",
            input: Input,
            output: Schema.Array(Schema.String),
            plan: [asking("ask", "the old prompt", 2)],
          })
          const after = RunDefinition.make({
            capability: "agent.nondeterminism",
            input: Input,
            output: Schema.Array(Schema.String),
            plan: [asking("ask", "the new prompt", 2)],
          })
          const crashed = yield* start(before).pipe(
            Effect.flip,
            Support.on(
              agentRuntime(backend, [before], script, newTally(), {
                leaseTtlSecs: 1,
                crash: TestRuntime.crashAt("after_record", ModelCall.KIND),
              }),
            ),
          )
          const run = (crashed as Runtime.Crashed).run
          const result = yield* Support.resumeAfterLapse(run).pipe(
            Support.on(agentRuntime(backend, [after], script, newTally())),
          )
          expect(result.status._tag).toBe("Quarantined")
          const message = result.status._tag === "Quarantined" ? result.status.message : ""
          expect(message).toContain("the old prompt")
          expect(message).toContain("the new prompt")
          expect(message).toContain("$.prompt")
          expect(yield* calls(script)).toBe(1)
        }).pipe(Backend.asFreshTenant),
    )

    describe("the invoice-dispute example", () => {
      it.live(
        "a small refund: classified, refunded through the tool with its key, case closed; Strict replay asks no model and no tool and writes nothing",
        () =>
          Effect.gen(function* () {
            const input = disputeInput(3_000)
            const script = yield* ScriptedModel.make(disputeScript("refund", 3_000, input.invoice))
            const tally = newTally()
            const layer = agentRuntime(backend, [Dispute.Dispute], script, tally)
            const result = yield* startDispute(input).pipe(Support.on(layer))
            expect(result.status._tag).toBe("Succeeded")
            expect(Option.getOrThrow(result.output)).toEqual({
              resolution: `refunded 3000 as re_${input.invoice}_3000, approved by agent`,
              refundId: `re_${input.invoice}_3000`,
            })
            expect(tally.calls).toBe(1)
            expect(yield* calls(script)).toBe(3)
            const records = yield* journal(result.run).pipe(Effect.provide(backend.layer))
            const kinds = Support.ofKind(records, "EffectStarted").map(
              (s) => (s.kind.descriptor as { kind: string }).kind,
            )
            expect(kinds.filter((k) => k === ModelCall.KIND)).toHaveLength(3)
            expect(kinds.filter((k) => k === "tool.issue_refund")).toHaveLength(1)
            const report = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(result.run)).pipe(Support.on(layer))
            expect(report.reproduced).toBe(true)
            expect(yield* calls(script)).toBe(3)
            expect(tally.calls).toBe(1)
            expect((yield* journal(result.run).pipe(Effect.provide(backend.layer))).length).toBe(records.length)
          }).pipe(Backend.asFreshTenant),
      )

      it.live(
        "a large refund waits for a reviewer, then refunds; a rejected dispute closes without the tool; both replay strictly",
        () =>
          Effect.gen(function* () {
            const large = disputeInput(9_000)
            const rejected = disputeInput(2_000)
            const script = yield* ScriptedModel.make([...disputeScript("refund", 9_000, large.invoice)])
            const rejectScript = yield* ScriptedModel.make(disputeScript("reject", 0, rejected.invoice))
            const tally = newTally()
            const layer = agentRuntime(backend, [Dispute.Dispute], script, tally)
            const waiting = yield* startDispute(large).pipe(Support.on(layer))
            expect(waiting.status._tag).toBe("Suspended")
            expect(yield* calls(script)).toBe(1)
            const task = yield* decideOpenTask(true).pipe(Support.on(layer))
            expect(task.justification.evidence).toEqual(["two captures for one order"])
            expect(task.excludedActors).toEqual(["invoice-bot"])
            const sealed = yield* Effect.flatMap(JournalStore, (j) => j.runsByOutcome("succeeded", 1000)).pipe(
              Effect.provide(backend.layer),
            )
            expect(sealed).toContain(waiting.run)
            expect(tally.calls).toBe(1)
            expect(yield* calls(script)).toBe(3)
            const replayLarge = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(waiting.run)).pipe(
              Support.on(layer),
            )
            expect(replayLarge.reproduced).toBe(true)

            const rejectLayer = agentRuntime(backend, [Dispute.Dispute], rejectScript, tally)
            const closed = yield* startDispute(rejected).pipe(Support.on(rejectLayer))
            expect(Option.getOrThrow(closed.output)).toEqual({
              resolution: "rejected (duplicate_charge)",
              refundId: null,
            })
            const replayRejected = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(closed.run)).pipe(
              Support.on(rejectLayer),
            )
            expect(replayRejected.reproduced).toBe(true)
            expect(yield* calls(rejectScript)).toBe(1)
            expect(tally.calls).toBe(1)
          }).pipe(Backend.asFreshTenant),
      )

      it.live(
        "a crash after the idempotent refund tool acted: the resumed run sends the same key, and the provider refunds once",
        () =>
          Effect.gen(function* () {
            const input = disputeInput(3_000)
            const script = yield* ScriptedModel.make(disputeScript("refund", 3_000, input.invoice))
            const tally = newTally()
            const crashed = yield* startDispute(input).pipe(
              Effect.flip,
              Support.on(
                agentRuntime(backend, [Dispute.Dispute], script, tally, {
                  leaseTtlSecs: 1,
                  crash: TestRuntime.crashAt("after_act", "tool.issue_refund"),
                }),
              ),
            )
            expect(tally.calls).toBe(1)
            const result = yield* Support.resumeAfterLapse((crashed as Runtime.Crashed).run).pipe(
              Support.on(agentRuntime(backend, [Dispute.Dispute], script, tally)),
            )
            expect(result.status._tag).toBe("Succeeded")
            expect(tally.calls).toBe(2)
            expect(new Set(tally.keys).size).toBe(1)
            expect(tally.refunds.size).toBe(1)
            // The proposal and the tool-call turn were journaled before the crash: only the confirmation is asked anew.
            expect(yield* calls(script)).toBe(3)
          }).pipe(Backend.asFreshTenant),
      )

      it.live(
        "a crash after a mutating tool without a recovery was announced quarantines the run: the refund is never sent",
        () =>
          Effect.gen(function* () {
            const input = disputeInput(3_000)
            const script = yield* ScriptedModel.make(disputeScript("refund", 3_000, input.invoice))
            const tally = newTally()
            const strict = RunDefinition.make({
              capability: "invoice-dispute-agent-strict",
              input: Dispute.Input,
              output: Schema.Unknown,
              plan: [Dispute.classify, Dispute.review, strictRefund],
            })
            const crashed = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
              rt.runCorrelated(strict, Run.labeled(input, "test"), "invoice-dispute", [
                CorrelationKey.make("invoice", input.invoice),
              ]),
            ).pipe(
              Effect.flip,
              Support.on(
                agentRuntime(backend, [strict], script, tally, {
                  leaseTtlSecs: 1,
                  crash: TestRuntime.crashAt("after_announce", "tool.issue_refund"),
                }),
              ),
            )
            const result = yield* Support.resumeAfterLapse((crashed as Runtime.Crashed).run).pipe(
              Support.on(agentRuntime(backend, [strict], script, tally)),
            )
            expect(result.status._tag).toBe("Quarantined")
            expect(tally.calls).toBe(0)
          }).pipe(Backend.asFreshTenant),
      )
    })
  })

/** The dispute's refund step with the tool declared mutating and nothing else: `RequiresOperator`. */
const strictRefund = Step.make({
  name: "refund",
  body: (input: Dispute.Input, prior) =>
    Effect.gen(function* () {
      const verdict = prior.of(Dispute.review)
      const toolkit = yield* ToolCall.journaled(yield* Dispute.RefundTools, { issue_refund: { mutates: true } })
      const outcome = yield* Conversation.converse({
        prompt: `Issue a refund of ${verdict.refundMinor} on ${input.invoice}.`,
        toolkit,
        maxTurns: 3,
      }).pipe(ModelCall.withJournal, Effect.orDie)
      return outcome.turns
    }),
})
