/**
 * The refund with its waits (`ReviewedRefund` of `examples/refund`), on memory and on a SQLite
 * file: it suspends at the review, a task the proposing agent may not take (four eyes); once a
 * reviewer approves, it sleeps until the cooling-off instant, and only when that timer fires
 * does the money move; the run meets its obligations and closes the case, so a sweep days later
 * breaches nothing. A declined review unwinds the deadline and moves no money. On PostgreSQL too.
 */
import { describe, it } from "@effect/vitest"
import { Clock, Effect, Either, Layer, Option } from "effect"
import { expect, inject } from "vitest"
import * as Providers from "../../examples/refund/Providers.js"
import * as Refund from "../../examples/refund/Refund.js"
import type { RunId } from "../../src/domain/Ids.js"
import { Decision } from "../../src/domain/Task.js"
import * as TaskId from "../../src/domain/TaskId.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as Backend from "../support/Backend.js"

const input: Refund.ReviewedInput = {
  invoice: "INV-2026-0042",
  amountMinor: 4000,
  invoiceTotalMinor: 12000,
  reason: "charged twice for one order",
  agent: "invoice-bot",
  coolingOffSecs: 1,
}

const on = (backend: Backend.Backend, tally: Providers.Tally) =>
  Refund.layer().pipe(Layer.provideMerge(Layer.merge(backend.layer, Providers.layerInMemory(tally))))

/** The task the suspended run waits on, from its suspend reason's key. */
const taskOf = (status: Runtime.RunResult<unknown>["status"]) => {
  if (status._tag !== "Suspended" || status.reason.reason !== "awaiting_event") {
    throw new Error(`expected a run waiting for its review, got ${JSON.stringify(status)}`)
  }
  const [key] = status.reason.correlation as ReadonlyArray<{ readonly namespace: string; readonly value: string }>
  expect(key?.namespace).toBe("task")
  return Either.getOrThrow(TaskId.parse(key?.value ?? ""))
}

const kinds = (run: RunId) =>
  Effect.flatMap(JournalStore, (j) => j.read(run, 1)).pipe(Effect.map((rs) => rs.map((r) => r.kind)))

/** Fires due timers until one fires (the cooling-off instant is a real second away), then waits for the woken run. */
const fireWhenDue = Effect.gen(function* () {
  const rt = yield* Runtime.Runtime
  for (let tries = 0; tries < 100; tries++) {
    if ((yield* rt.fireTimers(16)).fired > 0) return yield* rt.idle
    yield* Effect.sleep("100 millis")
  }
  throw new Error("the cooling-off timer never came due")
})

const suite = (name: string, make: () => Backend.Backend) =>
  describe(`reviewed refund example on ${name}`, () => {
    const backend = make()

    it.live("waits for a reviewer the agent cannot be, sleeps out the cooling-off, then refunds once", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const tasks = yield* TaskStore
        const first = yield* Refund.startReviewed(rt, input)
        const task = taskOf(first.status)
        expect(tally.refundCalls).toBe(0)

        // Four eyes: the agent that proposed the refund may not take its review, a reviewer may.
        const refused = yield* Effect.flip(tasks.claim(task, "invoice-bot", ["reviewer"]))
        expect(refused._tag).toBe("Excluded")
        yield* tasks.claim(task, "alice", ["reviewer"])
        const decision = new Decision({ approved: true, actor: "alice", reason: "two captures", amendment: null })
        expect((yield* rt.answerTask(task, decision))._tag).toBe("Resumed")
        yield* rt.idle

        // Approved, and asleep until the cooling-off instant: still no money moved.
        const journal = yield* JournalStore
        const head = yield* journal.head(first.run)
        const [suspended] = yield* journal.read(first.run, head.seq)
        expect(suspended?.kind).toMatchObject({ kind: "RunSuspended", reason: { reason: "awaiting_time" } })
        expect(tally.refundCalls).toBe(0)

        yield* fireWhenDue
        expect(tally.refundCalls).toBe(1)
        const sealed = yield* kinds(first.run)
        expect(sealed.at(-1)).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
        const cases = yield* CaseStore
        const kase = Option.getOrThrow(yield* cases.case(Option.getOrThrow(first.case)))
        expect(kase.state).toMatchObject({ refunds: [{ amountMinor: 4000 }] })
        // The run met both of its obligations and closed the case; the task registered none.
        expect(kase.status).toBe("closed")
        const deadlines = yield* cases.deadlines(kase.id)
        expect(deadlines.map((d) => [d.name, d.state])).toEqual([
          [`review ${first.run}`, "met"],
          [`refund ${first.run}`, "met"],
        ])
        // Two days on (and five), a sweep finds nothing due: no obligation is left to breach.
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const later = yield* Sweeper.sweep(Timestamp.make(now + 6 * 86_400))
        expect(later.breached).toBe(0)
        expect(Sweeper.needsAttention(later)).toBe(false)
      }).pipe(Effect.provide(on(backend, tally)), Backend.asFreshTenant)
    })

    it.live("a declined review moves no money, cancels the deadline and concludes compensated", () => {
      const tally = Providers.tally()
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const first = yield* Refund.startReviewed(rt, input)
        const task = taskOf(first.status)
        yield* (yield* TaskStore).claim(task, "alice", ["reviewer"])
        const decision = new Decision({ approved: false, actor: "alice", reason: "one capture only", amendment: null })
        expect((yield* rt.answerTask(task, decision))._tag).toBe("Resumed")
        yield* rt.idle
        expect(tally.refundCalls).toBe(0)
        expect((yield* kinds(first.run)).at(-1)).toMatchObject({ kind: "RunSealed", outcome: "compensated" })
        const deadlines = yield* (yield* CaseStore).deadlines(Option.getOrThrow(first.case))
        expect(deadlines.find((d) => d.name === `refund ${first.run}`)?.state).toBe("cancelled")
        // A person decided, in time: the review obligation is met whatever the verdict.
        expect(deadlines.find((d) => d.name === `review ${first.run}`)?.state).toBe("met")
      }).pipe(Effect.provide(on(backend, tally)), Backend.asFreshTenant)
    })
  })

suite("memory", Backend.memory)
suite("SQLite", Backend.sqlite)
suite("PostgreSQL", () => Backend.postgres(inject("pgUrl")))
