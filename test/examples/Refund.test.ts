/**
 * The example of docs/library.md ("Write a run"): the refund of `examples/refund` on memory and on a
 * SQLite file. It refunds once and records it; a closed ledger period unwinds it (refund
 * reversed, then deadline cancelled); crashed in doubt at each of its mutating effects, fresh
 * runtimes finish it with one refund and one ledger entry at the providers.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Schedule } from "effect"
import { expect } from "vitest"
import * as Providers from "../../examples/refund/Providers.js"
import * as Refund from "../../examples/refund/Refund.js"
import type * as Runtime from "../../src/runtime/Runtime.js"
import * as RuntimeM from "../../src/runtime/Runtime.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"

const input: Refund.Input = {
  invoice: "INV-2026-0042",
  amountMinor: 4000,
  invoiceTotalMinor: 12000,
  reason: "charged twice for one order",
}

const on = (backend: Backend.Backend, tally: Providers.Tally, options: Runtime.Options = {}, closed = false) =>
  Refund.layer(options).pipe(
    Layer.provideMerge(Layer.merge(backend.layer, Providers.layerInMemory(tally, { periodClosed: closed }))),
  )

const kinds = (run: Parameters<JournalStore["Type"]["read"]>[0]) =>
  Effect.flatMap(JournalStore, (j) => j.read(run, 1)).pipe(Effect.map((rs) => rs.map((r) => r.kind)))

const suite = (name: string, make: () => Backend.Backend) =>
  describe(`refund example on ${name}`, () => {
    const backend = make()

    it.live("refunds once, posts once, records the refund in the case state and meets its deadline", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const result = yield* Effect.flatMap(RuntimeM.Runtime, (rt) => Refund.start(rt, input))
        expect(result.status._tag).toBe("Succeeded")
        const output = Option.getOrThrow(result.output)
        expect(tally.refundCalls).toBe(1)
        expect([...tally.entries.values()].map((e) => e.entry)).toEqual([output.entry])
        const cases = yield* CaseStore
        const kase = Option.getOrThrow(yield* cases.case(Option.getOrThrow(result.case)))
        expect(kase.state).toEqual({ refunds: [{ refundId: output.refundId, amountMinor: 4000, entry: output.entry }] })
        expect((yield* cases.deadlines(kase.id)).map((d) => d.state)).toEqual(["met"])
        expect((yield* kinds(result.run)).at(-1)).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
      }).pipe(Effect.provide(on(backend, tally)), Backend.asFreshTenant)
    })

    it.live("a refused ledger posting unwinds: the refund is reversed, then the deadline cancelled", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const result = yield* Effect.flatMap(RuntimeM.Runtime, (rt) => Refund.start(rt, input))
        expect(result.status._tag).toBe("Failed")
        expect([...tally.refunds.values()].map((r) => r.reversed)).toEqual([true])
        expect(tally.entries.size).toBe(0)
        const cases = yield* CaseStore
        const kase = Option.getOrThrow(result.case)
        expect((yield* cases.deadlines(kase)).map((d) => d.state)).toEqual(["cancelled"])
        // The state write is after the refused posting: the case never saw the refund.
        expect(JSON.stringify(Option.getOrThrow(yield* cases.case(kase)).state)).not.toContain("refunds")
        const journal = yield* kinds(result.run)
        expect(journal.filter((k) => k.kind === "StepCompensated")).toMatchObject([
          { compensation: { name: "refund" }, outcome: "compensated" },
          { compensation: { name: "assess" }, outcome: "compensated" },
        ])
        expect(journal.at(-1)).toMatchObject({ kind: "RunSealed", outcome: "compensated" })
      }).pipe(Effect.provide(on(backend, tally, {}, true)), Backend.asFreshTenant)
    })

    it.live("crashed in doubt at each mutating effect, fresh runtimes finish it with one refund and one entry", () => {
      const tally = Providers.tally()
      // Each crashed runtime's lease lapses after a second; the next runtime waits it out.
      const dying = (kind: string, point: "after_announce" | "after_act") =>
        on(backend, tally, { leaseTtlSecs: 1, crash: TestRuntime.crashAt(point, kind) })
      const resume = (run: Runtime.Crashed["run"], layer: ReturnType<typeof on>) =>
        Effect.flatMap(RuntimeM.Runtime, (rt) => rt.resume(run)).pipe(
          Effect.retry({ while: (e) => e._tag === "LeaseHeld", schedule: Schedule.spaced("200 millis"), times: 50 }),
          Effect.provide(layer),
        )
      return Effect.gen(function* () {
        const first = yield* Effect.flip(
          Effect.flatMap(RuntimeM.Runtime, (rt) => Refund.start(rt, input)).pipe(
            Effect.provide(dying("payments.refund", "after_act")),
          ),
        )
        expect(first).toMatchObject({ _tag: "Crashed", point: "after_act" })
        const run = (first as Runtime.Crashed).run
        expect(tally.refundCalls).toBe(1)
        // Idempotent: sent again with the same key, and the provider answers the first refund.
        const second = yield* Effect.flip(resume(run, dying("ledger.post", "after_act")))
        expect(second).toMatchObject({ _tag: "Crashed", point: "after_act" })
        expect(tally.refundCalls).toBe(2)
        expect(tally.refunds.size).toBe(1)
        expect(tally.entries.size).toBe(1)
        // Reconcile: the probe finds the entry, so the ledger is not posted to again.
        const done = yield* resume(run, on(backend, tally))
        expect(done.status._tag).toBe("Succeeded")
        expect(tally.refunds.size).toBe(1)
        expect(tally.entries.size).toBe(1)
        const journal = yield* kinds(run).pipe(Effect.provide(backend.layer))
        expect(journal.filter((k) => k.kind === "EffectReconciled")).toMatchObject([{ disposition: "landed" }])
      }).pipe(Backend.asFreshTenant)
    })
  })

suite("memory", Backend.memory)
suite("SQLite", Backend.sqlite)
