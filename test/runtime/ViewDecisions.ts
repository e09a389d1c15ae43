/**
 * §7.12 on the record: the records `viewRecords` answers give the policy decisions the whole
 * journal gives (`PolicyDecision.fromRecords`), and the same last record, at every point of runs
 * with refusals, releases and approvals approved, refused, expired and still open, over two
 * steps, between allowed effects the view does not read.
 */
import { describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { Decision } from "../../src/domain/Decision.js"
import * as Digest from "../../src/domain/Digest.js"
import type { CaseId, RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Decision as TaskDecision } from "../../src/domain/Task.js"
import { Timestamp } from "../../src/domain/Time.js"
import type { PolicyDenied } from "../../src/errors/PolicyError.js"
import * as PolicyDecision from "../../src/http/PolicyDecision.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const lookup = EffectKind.make({
  kind: "view.lookup",
  args: Schema.Struct({ who: Schema.String }),
  success: Schema.String,
  mutates: false,
  act: ({ who }) => Effect.succeed(`name of ${who}`),
})

const send = EffectKind.make({
  kind: "view.send",
  args: Schema.Struct({ to: Schema.String }),
  success: Schema.String,
  mutates: true,
  act: ({ to }) => Effect.succeed(`sent to ${to}`),
})

/** `lookup`: allowed; `deny`: a send refused and handled; `release`: of the input; `ask`: a send a reviewer must approve, a refusal handled; `deadline`: an obligation due at once, so the sweeper expires the next task. */
type Op = "lookup" | "deny" | "release" | "ask" | "deadline"

const script = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function* () {
    const cx = yield* StepCtx
    for (const [i, op] of ops.entries()) {
      if (op === "lookup") yield* cx.perform(lookup, { who: `who-${i}` })
      if (op === "deny") yield* cx.perform(send, { to: "blocked" }).pipe(Effect.option)
      if (op === "release") yield* cx.release({ step: i }, `release ${i}`)
      if (op === "ask") yield* cx.perform(send, { to: `eyes-${i}` }).pipe(Effect.option)
      if (op === "deadline") yield* cx.deadline(`due-${i}`, Deadline.minutes(0))
    }
    return ops.length
  })

const Input = Schema.Struct({ first: Schema.Array(Schema.String), second: Schema.Array(Schema.String) })

const def = RunDefinition.make({
  capability: "view.decisions",
  input: Input,
  output: Schema.Number,
  plan: [
    Step.make<typeof Input.Type, number, PolicyDenied>({
      name: "first",
      body: (input) => script(input.first as ReadonlyArray<Op>),
    }),
    Step.make<typeof Input.Type, number, PolicyDenied>({
      name: "second",
      body: (input) => script(input.second as ReadonlyArray<Op>),
    }),
  ],
})

const policy = Layer.succeed(
  PolicyEngine.PolicyEngine,
  PolicyEngine.PolicyEngine.of({
    bundle: { digest: Digest.of("view decisions"), source: "view decisions" },
    decide: (request) => {
      const to = (request.context.args as { readonly to?: unknown }).to
      return Effect.succeed(
        to === "blocked"
          ? Decision.Deny({ reason: "blocked" })
          : typeof to === "string" && to.startsWith("eyes")
            ? Decision.RequireApproval({ roles: ["reviewer"], reason: "eyes" })
            : Decision.Allow(),
      )
    },
  }),
)

/** The view's decisions and last record against the whole journal's; answers the decisions' tags. */
const same = (run: RunId) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const full = yield* journal.read(run, 1)
    const view = yield* journal.viewRecords(run)
    expect(view.map((r) => r.seq)).toEqual([...new Set(view.map((r) => r.seq))].sort((a, b) => a - b))
    expect(view[view.length - 1]).toEqual(full[full.length - 1])
    // The allowed lookups and the steps' boundaries are not read.
    expect(view.length).toBeLessThan(full.length)
    const decisions = PolicyDecision.fromRecords(view)
    expect(decisions).toEqual(PolicyDecision.fromRecords(full))
    return decisions.map((d) =>
      d._tag === "Approval"
        ? `Approval:${Option.match(d.decided, { onNone: () => "open", onSome: (x) => x.actor })}`
        : d._tag,
    )
  })

const openTask = (kase: Option.Option<CaseId>) =>
  Effect.gen(function* () {
    const tasks = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(kase)))
    const open = tasks.find((t) => t.state === "open")
    if (open === undefined) return yield* Effect.dieMessage("no open task")
    return open.id
  })

const by = (actor: string, approved: boolean) =>
  new TaskDecision({ approved, actor, reason: "checked", amendment: null })

export const suite = (backend: Backend.Backend) =>
  describe("the run view's records", () => {
    it.live("give the whole journal's decisions: approved, refused, open; refusals and releases between", () =>
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const input = {
          first: ["lookup", "deny", "lookup", "release", "ask", "lookup", "ask", "lookup"],
          second: ["lookup", "ask", "lookup", "deny"],
        }
        const started = yield* rt.runCorrelated(def, Run.labeled(input, "operator"), "view", [
          CorrelationKey.make("view", `mixed-${Math.random()}`),
        ])
        expect(started.status._tag).toBe("Suspended")
        expect(yield* same(started.run)).toEqual(["Denied", "Released", "Approval:open"])
        yield* rt.decideTask(yield* openTask(started.case), by("alice", true), ["reviewer"])
        yield* rt.idle
        expect(yield* same(started.run)).toEqual(["Denied", "Released", "Approval:alice", "Approval:open"])
        yield* rt.decideTask(yield* openTask(started.case), by("bob", false), ["reviewer"])
        yield* rt.idle
        expect(yield* same(started.run)).toEqual([
          "Denied",
          "Released",
          "Approval:alice",
          "Approval:bob",
          "Denied",
          "Approval:open",
        ])
        // The wake-up after a handled refusal replays it through its wait, and the run concludes.
        yield* rt.decideTask(yield* openTask(started.case), by("carol", true), ["reviewer"])
        yield* rt.idle
        expect(yield* Support.concludedAs(started.run, "succeeded")).toBe(true)
        expect(yield* same(started.run)).toEqual([
          "Denied",
          "Released",
          "Approval:alice",
          "Approval:bob",
          "Denied",
          "Approval:carol",
          "Denied",
        ])
      }).pipe(Support.on(Support.runtime(backend, [def], { policy })), Backend.asFreshTenant),
    )

    it.live("give the whole journal's decisions once an approved run concluded", () =>
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const input = { first: ["lookup", "ask", "lookup"], second: ["deny", "lookup", "release"] }
        const started = yield* rt.runCorrelated(def, Run.labeled(input, "operator"), "view", [
          CorrelationKey.make("view", `concluded-${Math.random()}`),
        ])
        expect(yield* same(started.run)).toEqual(["Approval:open"])
        yield* rt.decideTask(yield* openTask(started.case), by("alice", true), ["reviewer"])
        yield* rt.idle
        expect(yield* Support.concludedAs(started.run, "succeeded")).toBe(true)
        expect(yield* same(started.run)).toEqual(["Approval:alice", "Denied", "Released"])
      }).pipe(Support.on(Support.runtime(backend, [def], { policy })), Backend.asFreshTenant),
    )

    it.live("give the whole journal's decisions when the sweeper expires an approval, and the next is open", () =>
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const input = { first: ["deadline", "lookup", "ask", "lookup"], second: ["release", "lookup", "ask"] }
        const started = yield* rt.runCorrelated(def, Run.labeled(input, "operator"), "view", [
          CorrelationKey.make("view", `expiry-${Math.random()}`),
        ])
        expect(yield* same(started.run)).toEqual(["Approval:open"])
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        expect((yield* Sweeper.sweep(Timestamp.make(now + 1))).tasksExpired).toBe(1)
        yield* rt.idle
        const [expired, refusal, released, open] = yield* same(started.run)
        expect([expired?.startsWith("Approval:"), expired === "Approval:open", refusal, released, open]).toEqual([
          true,
          false,
          "Denied",
          "Released",
          "Approval:open",
        ])
      }).pipe(Support.on(Support.runtime(backend, [def], { policy })), Backend.asFreshTenant),
    )
  })
