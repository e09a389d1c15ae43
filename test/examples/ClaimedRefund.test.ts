/**
 * The refund an event names (`ClaimedRefund` of `examples/refund`) under the demo's Cedar bundle,
 * on memory, SQLite and PostgreSQL: the amount comes from the agent's event, so the refund is
 * held for a reviewer (a four-eyes task the operator who admitted the run may not decide) and
 * acts once approved; a claim above 500.00 is refused by the bundle with no one asked, nothing
 * acts, and the step concludes without a refund, its obligation cancelled.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { expect, inject } from "vitest"
import { ClaimedRefund } from "../../examples/refund/ClaimedRefund.js"
import * as Providers from "../../examples/refund/Providers.js"
import * as Calendar from "../../src/domain/Calendar.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"

const demoPolicy = PolicyEngineCedar.layerPath("examples/demo-policy").pipe(Layer.provide(NodeFileSystem.layer))

const on = (backend: Backend.Backend, tally: Providers.Tally) =>
  Layer.mergeAll(Runtime.layer(), RunDefinition.register(ClaimedRefund)).pipe(
    Layer.provide(demoPolicy),
    Layer.provideMerge(Layer.merge(RunDefinition.layerRegistry, Calendar.layerWallClock)),
    Layer.provideMerge(Layer.merge(backend.layer, Providers.layerInMemory(tally))),
  )

const start = (invoice: string) =>
  Effect.flatMap(Runtime.Runtime, (rt) =>
    rt.runCorrelated(ClaimedRefund, Run.labeled({ invoice }, "api:ops"), "invoice-dispute", [
      CorrelationKey.make("invoice", invoice),
    ]),
  )

const claim = (invoice: string, amountMinor: number) =>
  Effect.flatMap(Runtime.Runtime, (rt) =>
    rt.deliver(
      new InboundEvent({
        source: "invoice-bot",
        id: `claim-${invoice}`,
        kind: "refund.claimed",
        correlation: [CorrelationKey.make("invoice", invoice)],
        payload: { amountMinor },
      }),
    ),
  )

const kinds = (run: RunId) =>
  Effect.flatMap(JournalStore, (j) => j.read(run, 1)).pipe(Effect.map((rs) => rs.map((r) => r.kind)))

const suite = (name: string, make: () => Backend.Backend) =>
  describe(`claimed refund example on ${name}`, () => {
    const backend = make()

    it.live("the claimed amount waits for a reviewer, and refunds once when approved", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const opened = yield* start("INV-1")
        expect(opened.status).toMatchObject({ _tag: "Suspended", reason: { kind: "refund.claimed" } })
        expect((yield* claim("INV-1", 2500))._tag).toBe("Resumed")
        yield* rt.idle
        // The refund is held: the run waits on the approval task the runtime opened on its case.
        expect((yield* kinds(opened.run)).at(-1)).toMatchObject({
          kind: "RunSuspended",
          reason: { reason: "awaiting_event", kind: "agentplane.task.decided" },
        })
        expect(tally.refundCalls).toBe(0)
        const tasks = yield* TaskStore
        const [shown, ...others] = yield* tasks.forCase(Option.getOrThrow(opened.case))
        if (shown === undefined) throw new Error("no approval task was opened")
        expect(others).toEqual([])
        const task = shown.id
        expect(shown.candidateRoles).toEqual(["reviewer"])
        expect(shown.justification.proposedAction).toMatchObject({
          kind: "payments.refund",
          args: { invoice: "INV-1", amountMinor: 2500 },
          outbound_label: "untrusted",
        })
        // The operator who admitted the run may not approve its refund.
        expect((yield* Effect.flip(tasks.claim(task, "api:ops", ["reviewer"])))._tag).toBe("Excluded")
        yield* tasks.claim(task, "alice", ["reviewer"])
        const approved = new Decision({ approved: true, actor: "alice", reason: "matches", amendment: null })
        expect((yield* rt.answerTask(task, approved))._tag).toBe("Resumed")
        yield* rt.idle

        expect(tally.refundCalls).toBe(1)
        const journal = yield* kinds(opened.run)
        expect(journal.filter((k) => k.kind === "PolicyDenied")).toEqual([])
        expect(journal.find((k) => k.kind === "EffectStarted" && k.outbound_label === "untrusted")).toBeDefined()
        expect(journal.at(-1)).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
        const cases = yield* CaseStore
        const deadlines = yield* cases.deadlines(Option.getOrThrow(opened.case))
        expect(deadlines.map((d) => [d.name, d.state])).toEqual([[`claim ${opened.run}`, "met"]])
      }).pipe(Effect.provide(on(backend, tally)), Backend.asFreshTenant)
    })

    it.live("a claim above 500.00 is refused by the bundle: no task, no act, the obligation cancelled", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const opened = yield* start("INV-2")
        expect((yield* claim("INV-2", 50_001))._tag).toBe("Resumed")
        yield* rt.idle
        expect(tally.refundCalls).toBe(0)
        const journal = yield* kinds(opened.run)
        expect(journal.filter((k) => k.kind === "PolicyDenied")).toEqual([
          {
            kind: "PolicyDenied",
            action: "payments.refund",
            resource: `case:${Option.getOrThrow(opened.case)}`,
            reason: "an event's payload may not steer a refund above 500.00",
          },
        ])
        // Refused before its announcement: no refund was announced, so none could act.
        expect(
          journal.filter(
            (k) => k.kind === "EffectStarted" && (k.descriptor as { kind?: string }).kind === "payments.refund",
          ),
        ).toEqual([])
        expect(journal.at(-1)).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
        const cases = yield* CaseStore
        const kase = Option.getOrThrow(opened.case)
        expect(yield* (yield* TaskStore).forCase(kase)).toEqual([])
        const deadlines = yield* cases.deadlines(kase)
        expect(deadlines.map((d) => [d.name, d.state])).toEqual([[`claim ${opened.run}`, "cancelled"]])
      }).pipe(Effect.provide(on(backend, tally)), Backend.asFreshTenant)
    })
  })

suite("memory", Backend.memory)
suite("SQLite", Backend.sqlite)
suite("PostgreSQL", () => Backend.postgres(inject("pgUrl")))
