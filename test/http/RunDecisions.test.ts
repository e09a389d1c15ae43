/**
 * `GET /runs/{run}` lists the run's policy decisions (§7.12) on each backend: a refusal the step
 * handled, a release, an approval while its task is open and once a reviewer decided it; a refused
 * approval shows who refused and the refusal it became, which ended the run.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { Decision } from "../../src/domain/Decision.js"
import * as Digest from "../../src/domain/Digest.js"
import type { PolicyDenied } from "../../src/errors/PolicyError.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

const send = EffectKind.make({
  kind: "http-test.send",
  args: Schema.Struct({ to: Schema.String }),
  success: Schema.String,
  mutates: true,
  act: ({ to }) => Effect.succeed(`sent to ${to}`),
})

/** A send to `blocked` (refused, and handled), a release of the input, then a send a reviewer must approve. */
const decided = RunDefinition.make({
  capability: "http-test.decided",
  input: Schema.Struct({ invoice: Schema.String }),
  output: Schema.String,
  plan: [
    Step.make<{ readonly invoice: string }, string, PolicyDenied>({
      name: "send",
      body: (input) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx
            .perform(send, { to: "blocked" })
            .pipe(Effect.catchTag("PolicyDenied", (d) => Effect.succeed(`handled: ${d.reason}`)))
          yield* cx.release(input, "the operator typed it")
          return yield* cx.perform(send, { to: "ann" })
        }),
    }),
  ],
})

/** Two sends in one step, each held for a reviewer: each approval must be paired with its own task. */
const twice = RunDefinition.make({
  capability: "http-test.twice",
  input: Schema.Struct({ invoice: Schema.String }),
  output: Schema.String,
  plan: [
    Step.make<{ readonly invoice: string }, string, PolicyDenied>({
      name: "send",
      body: () =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.perform(send, { to: "ann" })
          return yield* cx.perform(send, { to: "bob" })
        }),
    }),
  ],
})

const BLOCKED = "blocked recipients are refused"
const EYES = "a send needs a second pair of eyes"

/** Refuses sends to `blocked`, asks a reviewer for any other send, allows releases. */
const policy = Layer.succeed(
  PolicyEngine.PolicyEngine,
  PolicyEngine.PolicyEngine.of({
    bundle: { digest: Digest.of("http run decisions"), source: "http run decisions" },
    decide: (request) =>
      Effect.succeed(
        request.action === "agentplane.release"
          ? Decision.Allow()
          : (request.context.args as { readonly to?: unknown }).to === "blocked"
            ? Decision.Deny({ reason: BLOCKED })
            : Decision.RequireApproval({ roles: ["reviewer"], reason: EYES }),
      ),
  }),
)

const at = (d: { readonly _tag: string; readonly step: number; readonly phase: string }) => [d._tag, d.step, d.phase]

for (const backend of Http.backends()) {
  describe(`http run decisions (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect(
        "a handled refusal, a release and an approval are in the run view; the approval names who approved",
        () =>
          Http.withServer(
            (f) =>
              Effect.gen(function* () {
                const started = yield* f.inTenant(Definitions.start(f.runtime, decided, `INV-${Math.random()}`))
                const kase = Option.getOrThrow(started.case)
                const waiting = yield* f.as("rita").runs.read({ path: { run: started.run } })
                assert.deepStrictEqual(waiting.decisions.map(at), [
                  ["Denied", 0, "forward"],
                  ["Released", 0, "forward"],
                  ["Approval", 0, "forward"],
                ])
                const [denied, released, approval] = waiting.decisions
                assert.deepStrictEqual(
                  denied?._tag === "Denied" ? [denied.action, denied.resource, denied.reason] : [],
                  ["http-test.send", `case:${kase}`, BLOCKED],
                )
                assert.deepStrictEqual(
                  released?._tag === "Released" ? [released.releaser, released.release, released.labels] : [],
                  ["http-test.decided", "the operator typed it", ["input:test"]],
                )
                assert.isTrue(released?._tag === "Released" && /^[0-9a-f]{64}$/.test(released.valueDigest))
                if (approval?._tag !== "Approval") return assert.fail("no approval")
                assert.deepStrictEqual(
                  [approval.action, approval.roles, approval.reason, approval.decided],
                  [Option.some("http-test.send"), ["reviewer"], EYES, Option.none()],
                )
                // The approval names the task a reviewer finds in the worklist.
                const [task] = (yield* f.as("rita").tasks.list({ urlParams: {} })).items
                assert.deepStrictEqual(approval.task, Option.some(task?.id))
                assert.deepStrictEqual(task?.justification.proposedAction, {
                  kind: "http-test.send",
                  args: { to: "ann" },
                  outbound_label: "trusted",
                })
                // On the wire the task is `task_<hex>`, the decision null while open.
                const raw = yield* f.raw("GET", `/runs/${started.run}`, { as: "rita" })
                const wire = (raw.json as { decisions: Array<Record<string, unknown>> }).decisions[2]
                // While the task is open the journal does not name the action; the route reads it from the task.
                assert.deepStrictEqual(
                  [wire?.task, wire?.decided, wire?.action],
                  [`task_${task?.id}`, null, "http-test.send"],
                )
                yield* f.as("rita").tasks.decide({
                  path: { task: task?.id as never },
                  payload: { approved: true, reason: "ann is expected", amendment: null },
                })
                yield* f.runtime.idle
                const done = yield* f.as("rita").runs.read({ path: { run: started.run } })
                assert.deepStrictEqual(done.outcome, Option.some("succeeded" as const))
                assert.deepStrictEqual(done.decisions.slice(0, 2), waiting.decisions.slice(0, 2))
                const approved = done.decisions[2]
                assert.deepStrictEqual(approved?._tag === "Approval" ? [approved.action, approved.decided] : [], [
                  Option.some("http-test.send"),
                  Option.some({ approved: true, actor: "rita", reason: "ann is expected" }),
                ])
                assert.strictEqual(done.decisions.length, 3)
                // Another tenant's caller does not see the run at all.
                const other = yield* f.raw("GET", `/runs/${started.run}`, { as: "bob" })
                assert.strictEqual(other.status, 404)
              }),
            { definitions: [decided], policy },
          ),
      )

      it.effect("a refused approval shows who refused and the refusal it became, which failed the run", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(Definitions.start(f.runtime, decided, `INV-${Math.random()}`))
              const [task] = (yield* f.as("sam").tasks.list({ urlParams: {} })).items
              yield* f.as("sam").tasks.decide({
                path: { task: task?.id as never },
                payload: { approved: false, reason: "ann left", amendment: null },
              })
              yield* f.runtime.idle
              const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
              assert.deepStrictEqual(read.decisions.map(at), [
                ["Denied", 0, "forward"],
                ["Released", 0, "forward"],
                ["Approval", 0, "forward"],
                ["Denied", 0, "forward"],
              ])
              const [, , approval, refusal] = read.decisions
              assert.deepStrictEqual(approval?._tag === "Approval" ? [approval.action, approval.decided] : [], [
                Option.some("http-test.send"),
                Option.some({ approved: false, actor: "sam", reason: "ann left" }),
              ])
              assert.deepStrictEqual(refusal?._tag === "Denied" ? [refusal.action, refusal.reason] : [], [
                "http-test.send",
                "sam did not approve it: ann left",
              ])
              assert.deepStrictEqual(read.outcome, Option.some("failed" as const))
              assert.match(
                Option.getOrElse(read.reason, () => ""),
                /sam did not approve it: ann left/,
              )
            }),
          { definitions: [decided], policy },
        ),
      )

      it.effect("two approvals in one step each name their own task and who decided it", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(Definitions.start(f.runtime, twice, `INV-${Math.random()}`))
              const decide = (who: "rita" | "sam", reason: string) =>
                Effect.gen(function* () {
                  const [task] = (yield* f.as(who).tasks.list({ urlParams: {} })).items
                  yield* f.as(who).tasks.decide({
                    path: { task: task?.id as never },
                    payload: { approved: true, reason, amendment: null },
                  })
                  yield* f.runtime.idle
                  return task?.id
                })
              const first = yield* decide("rita", "ann is expected")
              const second = yield* decide("sam", "bob is expected")
              assert.notStrictEqual(first, second)
              const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
              assert.deepStrictEqual(read.outcome, Option.some("succeeded" as const))
              assert.deepStrictEqual(
                read.decisions.map((d) =>
                  d._tag === "Approval" ? [d.task, Option.map(d.decided, (x) => [x.actor, x.reason])] : [],
                ),
                [
                  [Option.some(first), Option.some(["rita", "ann is expected"])],
                  [Option.some(second), Option.some(["sam", "bob is expected"])],
                ],
              )
            }),
          { definitions: [twice], policy },
        ),
      )

      it.effect("a run under no refusal, approval or release lists no decisions", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const started = yield* f.inTenant(
                Definitions.start(f.runtime, Definitions.awaitsPayment, `INV-${Math.random()}`),
              )
              const read = yield* f.as("rita").runs.read({ path: { run: started.run } })
              assert.deepStrictEqual(read.decisions, [])
              const raw = yield* f.raw("GET", `/runs/${started.run}`, { as: "rita" })
              assert.deepStrictEqual((raw.json as { decisions: unknown }).decisions, [])
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )
    })
  })
}
