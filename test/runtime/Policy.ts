/**
 * §7.12 runs under policy: every declared effect is decided before its announcement; a refusal is
 * journaled (`PolicyDenied`), answered to the step as a typed error and counted against
 * `maxDenials`; labels join what a step received; a release declassifies one value; Resume and
 * Strict read decisions from the journal and ask no engine; a runtime without an engine admits
 * nothing.
 */
import { describe, it } from "@effect/vitest"
import {
  Clock,
  Context,
  Effect,
  Runtime as EffectRuntime,
  Either,
  FastCheck,
  Layer,
  Metric,
  MetricLabel,
  Option,
  Schema,
} from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { Decision } from "../../src/domain/Decision.js"
import * as Digest from "../../src/domain/Digest.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { PolicyRequest } from "../../src/domain/PolicyRequest.js"
import * as Run from "../../src/domain/Run.js"
import { EXPIRY_ACTOR, Decision as TaskDecision } from "../../src/domain/Task.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import { type PolicyDenied, PolicyUnavailable } from "../../src/errors/PolicyError.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../../src/policy/Bundle.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as Observability from "../../src/runtime/Observability.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/** A read whose answer is outside data (a tool's output), and a send that changes the world. */
const kinds = (counter: Support.Counter) => ({
  lookup: EffectKind.make({
    kind: "policy.lookup",
    args: Schema.Struct({ who: Schema.String }),
    success: Schema.Struct({ name: Schema.String }),
    mutates: false,
    act: ({ who }) =>
      Effect.sync(() => {
        counter.bump("policy.lookup")
        return { name: `name of ${who}` }
      }),
  }),
  send: EffectKind.make({
    kind: "policy.send",
    args: Schema.Struct({ to: Schema.String }),
    success: Schema.String,
    mutates: true,
    act: ({ to }) =>
      Effect.sync(() => {
        counter.bump("policy.send")
        return `sent to ${to}`
      }),
  }),
})

const SCHEMA = `
action "policy.lookup", "policy.send" in [Agentplane::Action::"effect"] appliesTo {
  principal: Agentplane::Agent,
  resource: [Agentplane::Case, Agentplane::Run],
  context: Agentplane::EffectContext,
};
`

/** Everything is permitted except a mutating effect on untrusted input; a release is permitted. */
const GUARD = `
@id("effects") permit (principal, action in Agentplane::Action::"effect", resource);
@id("releases") permit (principal, action == Agentplane::Action::"agentplane.release", resource);
@id("no-untrusted-mutations")
@reason("a mutating effect may not run on untrusted input")
forbid (principal, action in Agentplane::Action::"effect", resource)
when { context.mutates && context.label == "untrusted" };
`

const cedar = (policies: string = GUARD): PolicyEngine.PolicyEngine["Type"] =>
  Either.match(
    PolicyEngineCedar.load(Bundle.make("test-policy", [{ name: "guard.cedar", text: policies }], [SCHEMA])),
    {
      onLeft: (e) => {
        throw new Error(e.message)
      },
      onRight: PolicyEngineCedar.engine,
    },
  )

/** An engine that answers by `answer` and keeps every request it was asked, under a fixed identity. */
const recording = (answer: (request: PolicyRequest) => Decision = () => Decision.Allow(), name = "recording") => {
  const asked: Array<PolicyRequest> = []
  const engine = PolicyEngine.PolicyEngine.of({
    bundle: { digest: Digest.of(name), source: name },
    decide: (request) =>
      Effect.sync(() => {
        asked.push(request)
        return answer(request)
      }),
  })
  return { engine, asked, layer: Layer.succeed(PolicyEngine.PolicyEngine, engine) }
}

const Input = Schema.Struct({ to: Schema.String })

/** One step: a lookup, then a send; the step answers what became of the send. */
const lookupThenSend = (capability: string, k: ReturnType<typeof kinds>, budget?: Run.Budget) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.String,
    plan: [
      Step.make<{ readonly to: string }, string, PolicyDenied>({
        name: "mail",
        body: ({ to }) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.perform(k.lookup, { who: to })
            return yield* cx
              .perform(k.send, { to })
              .pipe(Effect.catchTag("PolicyDenied", (d) => Effect.succeed(`denied: ${d.reason}`)))
          }),
      }),
    ],
    ...(budget === undefined ? {} : { budget }),
  })

/** One step sending on its input, not handling a refusal: the step (and the run) fails on one. */
const sendOnly = (capability: string, k: ReturnType<typeof kinds>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.String,
    plan: [
      Step.make<{ readonly to: string }, string, PolicyDenied>({
        name: "send",
        body: ({ to }) => Effect.flatMap(StepCtx, (cx) => cx.perform(k.send, { to })),
      }),
    ],
  })

const admit = (def: RunDefinition.Any, to: string, label: string) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ to }, label)))

const withEngine = (engine: PolicyEngine.PolicyEngine["Type"]) => Layer.succeed(PolicyEngine.PolicyEngine, engine)

/** `engine` with every decision counted: a replay that asks it shows up here. */
const counted = (engine: PolicyEngine.PolicyEngine["Type"]) => {
  const calls = { n: 0 }
  return {
    calls,
    engine: PolicyEngine.PolicyEngine.of({
      bundle: engine.bundle,
      decide: (request) =>
        Effect.zipRight(
          Effect.sync(() => calls.n++),
          engine.decide(request),
        ),
    }),
  }
}

type Op = "lookup" | "send" | "releaseLast" | "releaseInput"
interface PolicyPlan {
  readonly label: "operator" | "email"
  readonly ops: ReadonlyArray<Op>
}

const policyPlan: FastCheck.Arbitrary<PolicyPlan> = FastCheck.record({
  label: FastCheck.constantFrom("operator", "email"),
  ops: FastCheck.array(FastCheck.constantFrom<Op>("lookup", "send", "releaseLast", "releaseInput"), {
    minLength: 1,
    maxLength: 8,
  }),
})

const PROPERTY_RUNS = Number(process.env.AGENTPLANE_PROP_RUNS ?? 25)

/**
 * One step doing `ops` in order, each value distinct (keyed by its op's index): a refused send is
 * caught and counted out, a release releases the last answer received (or the input). Answers
 * how many sends acted.
 */
const planned = (capability: string, k: ReturnType<typeof kinds>, ops: ReadonlyArray<Op>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Number,
    plan: [
      Step.make<{ readonly to: string }, number, PolicyDenied>({
        name: "ops",
        body: (input) =>
          Effect.gen(function* () {
            const cx = yield* StepCtx
            let acted = 0
            let last: unknown
            for (const [i, op] of ops.entries()) {
              if (op === "lookup") last = yield* cx.perform(k.lookup, { who: `who-${i}` })
              if (op === "send") {
                const sent = yield* cx.perform(k.send, { to: `to-${i}` }).pipe(Effect.option)
                if (Option.isSome(sent)) {
                  acted += 1
                  last = sent.value
                }
              }
              if (op === "releaseLast" && last !== undefined) yield* cx.release(last, `release ${i}`)
              if (op === "releaseInput") yield* cx.release(input, `release input ${i}`)
            }
            return acted
          }),
      }),
    ],
  })

/** The model: the taint is every unreleased answer or untrusted input; a send acts only untainted. */
const expected = (p: PolicyPlan): { readonly acted: number; readonly denied: number } => {
  let inputTainted = p.label === "email"
  const answers: Array<{ released: boolean }> = []
  let last: { released: boolean } | undefined
  let acted = 0
  let denied = 0
  const tainted = () => inputTainted || answers.some((a) => !a.released)
  for (const op of p.ops) {
    if (op === "lookup") {
      last = { released: false }
      answers.push(last)
    }
    if (op === "send") {
      if (tainted()) denied += 1
      else {
        acted += 1
        last = { released: false }
        answers.push(last)
      }
    }
    if (op === "releaseLast" && last !== undefined) last.released = true
    if (op === "releaseInput") inputTainted = false
  }
  return { acted, denied }
}

/** One step in a case: a send the step does not handle a refusal of. */
const sendInCase = (capability: string, k: ReturnType<typeof kinds>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.String,
    plan: [
      Step.make<{ readonly to: string }, string, PolicyDenied>({
        name: "send",
        body: ({ to }) => Effect.flatMap(StepCtx, (cx) => cx.perform(k.send, { to })),
      }),
    ],
  })

const by = (actor: string, approved: boolean) =>
  new TaskDecision({ approved, actor, reason: "checked", amendment: null })

const descriptorKind = (r: { readonly kind: { readonly descriptor: unknown } }) =>
  (r.kind.descriptor as { readonly kind: string }).kind

/** The reason the sweeper's expiry decision gave, as the run journaled the decision. */
const expiryReason = (records: ReadonlyArray<import("../../src/domain/Journal.js").Record>): string => {
  const done = Support.recordsOfKind(records, "EffectDone").find(
    (r) => (r.kind.output as { readonly actor?: unknown } | null)?.actor === EXPIRY_ACTOR,
  )
  return String((done?.kind.output as { readonly reason?: unknown } | undefined)?.reason)
}

const denials = (action: string) =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(Observability.denials, [MetricLabel.make("action", action)])),
    (state) => state.count,
  )

const order = (value: string) => CorrelationKey.make("mail", value)

const GUARD_REASON = "a mutating effect may not run on untrusted input"

export const suite = (backend: Backend.Backend) =>
  describe("policy", () => {
    it.live(
      "with no engine, or the deny-all one, admission is refused with PolicyMissing and nothing is written",
      () => {
        const k = kinds(new Support.Counter())
        const def = sendOnly("policy.none", k)
        const refuse = (policy: Layer.Layer<PolicyEngine.PolicyEngine>) =>
          Effect.gen(function* () {
            const refused = yield* Effect.flip(admit(def, "ann", "operator"))
            expect(refused._tag).toBe("PolicyMissing")
            expect(refused.message).toBe(PolicyEngine.NO_POLICY_REASON)
          }).pipe(Support.on(Support.runtime(backend, [def], { policy })), Backend.asFreshTenant)
        return Effect.gen(function* () {
          yield* refuse(Layer.empty as unknown as Layer.Layer<PolicyEngine.PolicyEngine>)
          yield* refuse(PolicyEngine.denyAll)
        })
      },
    )

    it.live("allowed: the act runs once; the admission names the bundle, the announcement its outbound label", () => {
      const counter = new Support.Counter()
      const def = sendOnly("policy.allow", kinds(counter))
      const engine = cedar()
      return Effect.gen(function* () {
        const done = yield* admit(def, "ann", "operator")
        expect(done.status).toEqual(Run.RunStatus.Succeeded({ output: "sent to ann" }))
        expect(counter.get("policy.send")).toBe(1)
        const records = yield* Support.journalOf(done.run)
        expect(Support.recordsOfKind(records, "RunAdmitted")[0]?.kind.policy_bundle).toBe(engine.bundle.digest)
        expect(Support.recordsOfKind(records, "EffectStarted").map((r) => r.kind.outbound_label)).toEqual(["trusted"])
        expect(Support.recordsOfKind(records, "PolicyDenied")).toEqual([])
      }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
    })

    it.live(
      "denied: nothing announced or acted, PolicyDenied journaled, the step handles the typed error; Strict replay asks no engine and writes nothing",
      () => {
        const counter = new Support.Counter()
        const def = lookupThenSend("policy.deny", kinds(counter))
        const { engine, calls } = counted(cedar())
        return Effect.gen(function* () {
          const deniedBefore = yield* denials("policy.send")
          const done = yield* admit(def, "ann", "operator")
          expect(done.status).toEqual(Run.RunStatus.Succeeded({ output: `denied: ${GUARD_REASON}` }))
          expect(counter.get("policy.send")).toBe(0)
          // §10: agentplane.policy.denials{action}.
          expect((yield* denials("policy.send")) - deniedBefore).toBe(1)
          expect(calls.n).toBe(2)
          const records = yield* Support.journalOf(done.run)
          expect(Support.recordsOfKind(records, "PolicyDenied").map((r) => r.kind)).toEqual([
            { kind: "PolicyDenied", action: "policy.send", resource: `run:${done.run}`, reason: GUARD_REASON },
          ])
          // Only the lookup was announced; the refusal carries the send's effect key.
          const started = Support.recordsOfKind(records, "EffectStarted")
          expect(started.map((r) => (r.kind.descriptor as { kind: string }).kind)).toEqual(["policy.lookup"])
          expect(Option.isSome(Support.recordsOfKind(records, "PolicyDenied")[0]?.effectKey ?? Option.none())).toBe(
            true,
          )
          const report = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(done.run))
          expect(report.reproduced).toBe(true)
          expect(calls.n).toBe(2)
          expect((yield* Support.journalOf(done.run)).length).toBe(records.length)
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
      },
    )

    it.live(
      "labels: the input's admission label, a tool's output, a release and the case's state each move the join",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const { engine, asked } = recording()
        const def = RunDefinition.make({
          capability: "policy.labels",
          input: Input,
          output: Schema.Number,
          plan: [
            Step.make<{ readonly to: string }, number, PolicyDenied>({
              name: "flow",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  // A tool's answer is outside data, a send's receipt too (§7.12): each taints the step
                  // until it is released.
                  const receipt = yield* cx.perform(k.send, { to: "first" })
                  yield* cx.release(receipt, "our own receipt")
                  const looked = yield* cx.perform(k.lookup, { who: to })
                  const second = yield* cx.perform(k.send, { to: "after lookup" })
                  yield* cx.release(looked, "checked against the CRM by hand")
                  yield* cx.release(second, "our own receipt")
                  yield* cx.perform(k.send, { to: "after release" })
                  yield* cx.caseState
                  yield* cx.perform(k.send, { to: "after case state" })
                  return 4
                }),
            }),
          ],
        })
        const sends = (records: ReadonlyArray<import("../../src/domain/Journal.js").Record>) =>
          Support.recordsOfKind(records, "EffectStarted")
            .filter((r) => (r.kind.descriptor as { kind: string }).kind === "policy.send")
            .map((r) => r.kind.outbound_label)
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const done = yield* rt.runCorrelated(def, Run.labeled({ to: "ann" }, "operator"), "order", [
            CorrelationKey.make("order", "labels-1"),
          ])
          expect(done.status._tag).toBe("Succeeded")
          expect(asked.map((r) => [r.action, r.context.label, [...r.context.provenances]])).toEqual([
            ["policy.send", "trusted", []],
            ["agentplane.release", "untrusted", ["tool:policy.send"]],
            ["policy.lookup", "trusted", []],
            ["policy.send", "untrusted", ["tool:policy.lookup"]],
            ["agentplane.release", "untrusted", ["tool:policy.lookup", "tool:policy.send"]],
            ["agentplane.release", "untrusted", ["tool:policy.send"]],
            ["policy.send", "trusted", []],
            // The previous send's receipt is still held, and now the case's state.
            ["policy.send", "untrusted", ["tool:policy.send", "case"]],
          ])
          expect(asked.every((r) => r.resource._tag === "Case")).toBe(true)
          expect(asked[0]?.principal).toMatchObject({ capability: "policy.labels", admittedBy: "operator" })
          const records = yield* Support.journalOf(done.run)
          expect(sends(records)).toEqual(["trusted", "untrusted", "trusted", "untrusted"])
          const released = Support.recordsOfKind(records, "Released").map((r) => r.kind)
          expect(released.map((r) => [r.releaser, r.release, r.labels])).toEqual([
            ["policy.labels", "our own receipt", ["tool:policy.send"]],
            ["policy.labels", "checked against the CRM by hand", ["tool:policy.lookup"]],
            ["policy.labels", "our own receipt", ["tool:policy.send"]],
          ])
          expect(released[1]?.value_digest).toBe(Digest.of('{"name":"name of ann"}'))
          // An input admitted from an untrusted source taints the step from its first effect on.
          const emailed = yield* rt.runCorrelated(def, Run.labeled({ to: "bob" }, "email"), "order", [
            CorrelationKey.make("order", "labels-2"),
          ])
          expect(emailed.status._tag).toBe("Succeeded")
          expect(asked[8]?.context.provenances).toEqual(["input:email"])
          expect(sends(yield* Support.journalOf(emailed.run))).toEqual([
            "untrusted",
            "untrusted",
            "untrusted",
            "untrusted",
          ])
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: recordingLayer(engine) })), Backend.asFreshTenant)
      },
    )

    it.live(
      "labels: an event's payload is untrusted (event:<kind>), in the live wait and after the wake-up that resumes it",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const { engine, asked } = recording()
        const def = RunDefinition.make({
          capability: "policy.event",
          input: Input,
          output: Schema.String,
          plan: [
            Step.make<{ readonly to: string }, string, PolicyDenied>({
              name: "wait then send",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  yield* cx.deadline("reply", Deadline.days(3))
                  yield* cx.awaitEvent({ kind: "mail.replied", correlation: [order(to)], deadline: "reply" })
                  return yield* cx.perform(k.send, { to })
                }),
            }),
          ],
        })
        const reply = (to: string, id: string) =>
          new InboundEvent({
            source: "mx",
            id,
            kind: "mail.replied",
            correlation: [order(to)],
            payload: { body: "refund 900" },
          })
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          // Found in the buffer: the live step received it.
          expect(yield* rt.deliver(reply("early", "r-1"))).toEqual(Runtime.Delivered.Buffered())
          const found = yield* rt.runCorrelated(def, Run.labeled({ to: "early" }, "operator"), "mail", [order("early")])
          expect(found.status._tag).toBe("Succeeded")
          // Delivered later: the woken run replays the wait's answer and is tainted by it all the same.
          const waiting = yield* rt.runCorrelated(def, Run.labeled({ to: "late" }, "operator"), "mail", [order("late")])
          expect(waiting.status._tag).toBe("Suspended")
          expect(yield* rt.deliver(reply("late", "r-2"))).toEqual(Runtime.Delivered.Resumed({ run: waiting.run }))
          yield* rt.idle
          expect(asked.map((r) => [r.action, r.context.label, [...r.context.provenances]])).toEqual([
            ["policy.send", "untrusted", ["event:mail.replied"]],
            ["policy.send", "untrusted", ["event:mail.replied"]],
          ])
          expect(counter.get("policy.send")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: recordingLayer(engine) })), Backend.asFreshTenant)
      },
    )

    it.live(
      "a wake-up under another bundle does not resume the run: nothing decided or acted until its own bundle wakes it",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const a = recording(() => Decision.Allow(), "bundle A")
        const b = recording(() => Decision.Allow(), "bundle B")
        const def = RunDefinition.make({
          capability: "policy.wake",
          input: Input,
          output: Schema.String,
          plan: [
            Step.make<{ readonly to: string }, string, PolicyDenied>({
              name: "wait then send",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  yield* cx.deadline("reply", Deadline.days(3))
                  yield* cx.awaitEvent({ kind: "mail.replied", correlation: [order(to)], deadline: "reply" })
                  return yield* cx.perform(k.send, { to })
                }),
            }),
          ],
        })
        const underA = Support.on(Support.runtime(backend, [def], { policy: withEngine(a.engine) }))
        const underB = Support.on(Support.runtime(backend, [def], { policy: withEngine(b.engine) }))
        const reply = new InboundEvent({
          source: "mx",
          id: "r-wake",
          kind: "mail.replied",
          correlation: [order("wake")],
          payload: { body: "hello" },
        })
        return Effect.gen(function* () {
          const waiting = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
            rt.runCorrelated(def, Run.labeled({ to: "wake" }, "operator"), "mail", [order("wake")]),
          ).pipe(underA)
          expect(waiting.status._tag).toBe("Suspended")
          yield* Effect.flatMap(Runtime.Runtime, (rt) => Effect.zipRight(rt.deliver(reply), rt.idle)).pipe(underB)
          expect([b.asked.length, counter.get("policy.send")]).toEqual([0, 0])
          const records = yield* Effect.provide(Support.journalOf(waiting.run), backend.layer)
          expect(Support.recordsOfKind(records, "RunSealed")).toEqual([])
          // Its own bundle's runtime finds the claimed event and finishes the run.
          const resumed = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
            Effect.zipLeft(rt.redeliverClaimed(10), rt.idle),
          ).pipe(underA)
          expect(resumed).toBe(1)
          expect([a.asked.map((r) => r.action), counter.get("policy.send")]).toEqual([["policy.send"], 1])
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live(
      "an engine that cannot answer is no decision: nothing acts or is journaled as refused; a Resume asks again",
      () => {
        const counter = new Support.Counter()
        const def = sendOnly("policy.fault", kinds(counter))
        let healthy = false
        const engine = PolicyEngine.PolicyEngine.of({
          bundle: { digest: Digest.of("flaky"), source: "flaky" },
          decide: () =>
            healthy
              ? Effect.succeed(Decision.Allow())
              : Effect.fail(new PolicyUnavailable({ detail: "evaluator down" })),
        })
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const failed = yield* admit(def, "x", "operator")
          expect(failed.status._tag).toBe("Failed")
          expect(counter.get("policy.send")).toBe(0)
          const records = yield* Support.journalOf(failed.run)
          expect(Support.recordsOfKind(records, "PolicyDenied")).toEqual([])
          expect(Support.recordsOfKind(records, "RunSealed")[0]?.kind.reason).toContain("evaluator down")
          healthy = true
          const resumed = yield* rt.resume(failed.run)
          expect(resumed.status._tag).toBe("Succeeded")
          expect(counter.get("policy.send")).toBe(1)
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
      },
    )

    it.live("cx.all decides each member once, a group of one included", () => {
      const counter = new Support.Counter()
      const k = kinds(counter)
      const { engine, asked } = recording()
      const group = (capability: string, n: number) =>
        RunDefinition.make({
          capability,
          input: Input,
          output: Schema.Unknown,
          plan: [
            Step.make<{ readonly to: string }, unknown, PolicyDenied>({
              name: "group",
              body: ({ to }) =>
                Effect.flatMap(StepCtx, (cx) =>
                  cx.all(Array.from({ length: n }, (_, i) => EffectKind.call(k.lookup, { who: `${to}-${i}` }))),
                ),
            }),
          ],
        })
      const one = group("policy.group.1", 1)
      const two = group("policy.group.2", 2)
      return Effect.gen(function* () {
        expect((yield* admit(one, "x", "operator")).status._tag).toBe("Succeeded")
        expect(asked.map((r) => r.action)).toEqual(["policy.lookup"])
        expect((yield* admit(two, "x", "operator")).status._tag).toBe("Succeeded")
        expect(asked.map((r) => r.action)).toEqual(["policy.lookup", "policy.lookup", "policy.lookup"])
        expect(counter.get("policy.lookup")).toBe(3)
      }).pipe(
        Support.on(Support.runtime(backend, [one, two], { policy: recordingLayer(engine) })),
        Backend.asFreshTenant,
      )
    })

    it.live("maxDenials: one refusal past the ceiling stops the run Exhausted(denials)", () => {
      const k = kinds(new Support.Counter())
      const twice = (capability: string, budget: Run.Budget) =>
        RunDefinition.make({
          capability,
          input: Input,
          output: Schema.Number,
          budget,
          plan: [
            Step.make<{ readonly to: string }, number, PolicyDenied>({
              name: "try twice",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  let refused = 0
                  for (let i = 0; i < 2; i++) {
                    yield* cx
                      .perform(k.send, { to: `${to}-${i}` })
                      .pipe(Effect.catchTag("PolicyDenied", () => Effect.sync(() => refused++)))
                  }
                  return refused
                }),
            }),
          ],
        })
      const none = twice("policy.denials.0", Run.budget({ maxDenials: 0 }))
      const one = twice("policy.denials.1", Run.budget({ maxDenials: 1 }))
      const two = twice("policy.denials.2", Run.budget({ maxDenials: 2 }))
      return Effect.gen(function* () {
        const stopped = yield* admit(none, "x", "email")
        expect(stopped.status).toEqual(Run.RunStatus.Exhausted({ limit: "denials" }))
        expect(Support.recordsOfKind(yield* Support.journalOf(stopped.run), "PolicyDenied")).toHaveLength(1)
        const second = yield* admit(one, "x", "email")
        expect(second.status).toEqual(Run.RunStatus.Exhausted({ limit: "denials" }))
        expect(Support.recordsOfKind(yield* Support.journalOf(second.run), "PolicyDenied")).toHaveLength(2)
        const within = yield* admit(two, "x", "email")
        expect(within.status).toEqual(Run.RunStatus.Succeeded({ output: 2 }))
      }).pipe(
        Support.on(Support.runtime(backend, [none, one, two], { policy: withEngine(cedar()) })),
        Backend.asFreshTenant,
      )
    })

    it.live("Resume replays a refusal without asking; a Resume under another bundle is refused", () => {
      const k = kinds(new Support.Counter())
      const def = sendOnly("policy.resume", k)
      const { engine, calls } = counted(cedar())
      return Effect.gen(function* () {
        const failed = yield* admit(def, "x", "email").pipe(
          Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })),
        )
        expect(failed.status._tag).toBe("Failed")
        expect(calls.n).toBe(1)
        const again = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(failed.run)).pipe(
          Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })),
        )
        expect(again.status._tag).toBe("Failed")
        expect(calls.n).toBe(1)
        expect(
          Support.recordsOfKind(yield* Effect.provide(Support.journalOf(failed.run), backend.layer), "PolicyDenied"),
        ).toHaveLength(1)
        const other = yield* Effect.flip(
          Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(failed.run)).pipe(
            Support.on(Support.runtime(backend, [def], { policy: PolicyEngine.allowAll })),
          ),
        )
        expect(other._tag).toBe("PlanContract")
        expect(other.message).toContain(engine.bundle.digest)
      }).pipe(Backend.asFreshTenant)
    })

    it.live(
      "a crash after the decision, before the announcement: nothing durable of the act; Resume decides again and acts once",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const def = lookupThenSend("policy.crash", k)
        const { engine, asked } = recording()
        return Effect.gen(function* () {
          const crashed = yield* admit(def, "ann", "operator").pipe(
            Effect.flip,
            Support.on(
              Support.runtime(backend, [def], {
                policy: recordingLayer(engine),
                leaseTtlSecs: 1,
                crash: (point, kind) => point === "after_decide" && kind === "policy.send",
              }),
            ),
          )
          expect(crashed).toBeInstanceOf(Runtime.Crashed)
          const run = (crashed as Runtime.Crashed).run
          expect(counter.get("policy.send")).toBe(0)
          const result = yield* Support.resumeAfterLapse(run).pipe(
            Support.on(Support.runtime(backend, [def], { policy: recordingLayer(engine) })),
          )
          expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: "sent to ann" }))
          expect(counter.get("policy.send")).toBe(1)
          expect(asked.map((r) => r.action)).toEqual(["policy.lookup", "policy.send", "policy.send"])
          const records = yield* Effect.provide(Support.journalOf(run), backend.layer)
          expect(Support.recordsOfKind(records, "EffectStarted")).toHaveLength(2)
        }).pipe(Backend.asFreshTenant)
      },
    )

    it.live(
      "property: under 'no mutating effect on untrusted input', no send ever acts with an untrusted outbound label",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        return Effect.gen(function* () {
          const runtime = yield* Effect.runtime<Support.Services | Tenant>()
          let n = 0
          const check = (p: PolicyPlan) =>
            Effect.gen(function* () {
              const capability = `policy.prop.${n++}`
              const def = planned(capability, k, p.ops)
              yield* Effect.flatMap(RunDefinition.Registry, (r) => r.add({ definition: def, context: Context.empty() }))
              const before = counter.get("policy.send")
              const result = yield* admit(def, "x", p.label)
              const want = expected(p)
              expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: want.acted }))
              expect(counter.get("policy.send") - before).toBe(want.acted)
              const records = yield* Support.journalOf(result.run)
              const sends = Support.recordsOfKind(records, "EffectStarted").filter(
                (r) => (r.kind.descriptor as { kind: string }).kind === "policy.send",
              )
              expect(sends.map((r) => r.kind.outbound_label)).toEqual(sends.map(() => "trusted"))
              expect(Support.recordsOfKind(records, "PolicyDenied")).toHaveLength(want.denied)
            })
          yield* Effect.promise(() =>
            FastCheck.assert(
              FastCheck.asyncProperty(policyPlan, (p) => EffectRuntime.runPromise(runtime)(check(p))),
              { numRuns: PROPERTY_RUNS, interruptAfterTimeLimit: 40_000, markInterruptAsFailure: true },
            ),
          )
        }).pipe(Support.on(Support.runtime(backend, [], { policy: withEngine(cedar()) })), Backend.asFreshTenant)
      },
    )

    it.live(
      "RequireApproval: a four-eyes task the step waits on; approved, the effect acts once; Strict replay asks no engine",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const def = sendInCase("policy.approve", k)
        const { engine, calls } = counted(
          recording(() =>
            Decision.RequireApproval({ roles: ["reviewer"], reason: "a send needs a second pair of eyes" }),
          ).engine,
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runCorrelated(def, Run.labeled({ to: "ann" }, "api:bot"), "mail", [order("approve")])
          expect(first.status._tag).toBe("Suspended")
          expect(counter.get("policy.send")).toBe(0)
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
          expect(task?.candidateRoles).toEqual(["reviewer"])
          // Whoever admitted the run may not approve its act.
          expect(task?.excludedActors).toEqual(["api:bot", "bot"])
          expect(task?.justification.proposedAction).toEqual({
            kind: "policy.send",
            args: { to: "ann" },
            outbound_label: "trusted",
          })
          const refused = yield* Effect.flip(rt.decideTask(task?.id as never, by("bot", true), ["reviewer"]))
          expect(refused._tag).toBe("Excluded")
          yield* rt.decideTask(task?.id as never, by("alice", true), ["reviewer"])
          yield* rt.idle
          expect(counter.get("policy.send")).toBe(1)
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          // Decided once, live; the wake-up read the journaled approval instead of asking.
          expect(calls.n).toBe(1)
          const report = yield* rt.replay(first.run)
          expect(report.reproduced).toBe(true)
          expect(calls.n).toBe(1)
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
      },
    )

    it.live("RequireApproval refused by the reviewer: PolicyDenied naming who refused, and nothing acts", () => {
      const counter = new Support.Counter()
      const k = kinds(counter)
      const def = sendInCase("policy.refuse", k)
      const { engine } = recording(() => Decision.RequireApproval({ roles: ["reviewer"], reason: "needs eyes" }))
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* rt.runCorrelated(def, Run.labeled({ to: "ann" }, "operator"), "mail", [order("refuse")])
        expect(first.status._tag).toBe("Suspended")
        const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
        yield* rt.decideTask(task?.id as never, by("alice", false), ["reviewer"])
        yield* rt.idle
        expect(counter.get("policy.send")).toBe(0)
        const records = yield* Support.journalOf(first.run)
        expect(Support.recordsOfKind(records, "PolicyDenied").map((r) => r.kind.reason)).toEqual([
          "alice did not approve it: checked",
        ])
        expect(Support.recordsOfKind(records, "EffectStarted").some((r) => descriptorKind(r) === "policy.send")).toBe(
          false,
        )
        // Replayed, the refusal walks the task's wait and its answer again, as the live run did.
        const report = yield* rt.replay(first.run)
        expect(report.reproduced).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
    })

    it.live(
      "RequireApproval refused and handled, then another approved: the wake-up replays the refusal, the run concludes",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const def = RunDefinition.make({
          capability: "policy.refuse.then.approve",
          input: Input,
          output: Schema.String,
          plan: [
            Step.make<{ readonly to: string }, string, PolicyDenied>({
              name: "send twice",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  // The first refusal is handled; the step goes on to ask again.
                  yield* cx.perform(k.send, { to: `${to} first` }).pipe(Effect.option)
                  return yield* cx.perform(k.send, { to: `${to} second` })
                }),
            }),
          ],
        })
        const { engine } = recording(() => Decision.RequireApproval({ roles: ["reviewer"], reason: "needs eyes" }))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runCorrelated(def, Run.labeled({ to: "ann" }, "operator"), "mail", [order("twice")])
          const open = () =>
            Effect.map(
              Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case))),
              (tasks) => tasks.find((t) => t.state === "open")?.id as never,
            )
          yield* rt.decideTask(yield* open(), by("alice", false), ["reviewer"])
          yield* rt.idle
          yield* rt.decideTask(yield* open(), by("bob", true), ["reviewer"])
          yield* rt.idle
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          expect(counter.get("policy.send")).toBe(1)
          const records = yield* Support.journalOf(first.run)
          // One refusal on the record: the wake-up answered the journaled one again, writing none.
          expect(Support.recordsOfKind(records, "PolicyDenied").map((r) => r.kind.reason)).toEqual([
            "alice did not approve it: checked",
          ])
          expect((yield* rt.replay(first.run)).reproduced).toBe(true)
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
      },
    )

    it.live(
      "RequireApproval past the run's obligation: the sweeper expires the task, and the effect is refused",
      () => {
        const counter = new Support.Counter()
        const k = kinds(counter)
        const def = RunDefinition.make({
          capability: "policy.approval.expiry",
          input: Input,
          output: Schema.String,
          plan: [
            Step.make<{ readonly to: string }, string, PolicyDenied>({
              name: "send by the deadline",
              body: ({ to }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  yield* cx.deadline("reply", Deadline.minutes(0))
                  return yield* cx.perform(k.send, { to })
                }),
            }),
          ],
        })
        const { engine } = recording(() => Decision.RequireApproval({ roles: ["reviewer"], reason: "needs eyes" }))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runCorrelated(def, Run.labeled({ to: "ann" }, "operator"), "mail", [order("expiry")])
          expect(first.status._tag).toBe("Suspended")
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
          const [registered] = Support.recordsOfKind(yield* Support.journalOf(first.run), "DeadlineRegistered")
          // Due when the obligation the run registered falls due.
          expect(task?.dueAt).toEqual(Option.some(registered?.kind.resolved_at))
          const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          const report = yield* Sweeper.sweep(Timestamp.make(now + 1))
          yield* rt.idle
          expect(report.tasksExpired).toBe(1)
          expect(counter.get("policy.send")).toBe(0)
          const records = yield* Support.journalOf(first.run)
          expect(Support.recordsOfKind(records, "PolicyDenied").map((r) => r.kind.reason)).toEqual([
            `${EXPIRY_ACTOR} did not approve it: ${expiryReason(records)}`,
          ])
        }).pipe(Support.on(Support.runtime(backend, [def], { policy: withEngine(engine) })), Backend.asFreshTenant)
      },
    )

    it.live("RequireApproval in a run without a case, or in cx.all, is refused: nobody can be asked there", () => {
      const counter = new Support.Counter()
      const k = kinds(counter)
      const alone = sendOnly("policy.approval.nocase", k)
      const group = RunDefinition.make({
        capability: "policy.approval.group",
        input: Input,
        output: Schema.Unknown,
        plan: [
          Step.make<{ readonly to: string }, unknown, PolicyDenied>({
            name: "both",
            body: ({ to }) =>
              Effect.flatMap(StepCtx, (cx) =>
                cx.all([EffectKind.call(k.send, { to: `${to}-1` }), EffectKind.call(k.send, { to: `${to}-2` })]),
              ),
          }),
        ],
      })
      const { engine } = recording(() => Decision.RequireApproval({ roles: ["reviewer"], reason: "large" }))
      return Effect.gen(function* () {
        const failed = yield* admit(alone, "x", "operator")
        expect(failed.status._tag).toBe("Failed")
        expect(counter.get("policy.send")).toBe(0)
        const [denied] = Support.recordsOfKind(yield* Support.journalOf(failed.run), "PolicyDenied")
        expect(denied?.kind.reason).toBe(
          "needs approval by reviewer (large), and a run without a case cannot hold the task",
        )
        const grouped = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
          rt.runCorrelated(group, Run.labeled({ to: "x" }, "operator"), "mail", [order("group")]),
        )
        expect(grouped.status._tag).toBe("Failed")
        expect(counter.get("policy.send")).toBe(0)
        const records = yield* Support.journalOf(grouped.run)
        expect(Support.recordsOfKind(records, "PolicyDenied").map((r) => r.kind.reason)).toEqual([
          "needs approval by reviewer (large); a member of cx.all does not wait for a task",
        ])
        expect(Support.recordsOfKind(records, "EffectStarted").some((r) => descriptorKind(r) === "policy.send")).toBe(
          false,
        )
      }).pipe(
        Support.on(Support.runtime(backend, [alone, group], { policy: withEngine(engine) })),
        Backend.asFreshTenant,
      )
    })
  })

const recordingLayer = (engine: PolicyEngine.PolicyEngine["Type"]) => withEngine(engine)
