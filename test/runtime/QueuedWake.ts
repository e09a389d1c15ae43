/**
 * Issue 16 C: a woken run queued for a wake permit keeps its lease. With one permit, run A is
 * woken and holds it, blocked in its act for more than twice the lease TTL; run B is woken
 * meanwhile, so its lease is taken and its resume waits for the permit. B must never be listed
 * abandoned while its owner lives: unrenewed, its lease lapsed, and another instance's recovery
 * (or redelivery) pass took it over and sent its act again. Once A is let go, both seal and each
 * act ran once.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Schedule, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

/**
 * Whole seconds, renewed every third of it: 6 lives at least 5 s past each renewal, so only a
 * renewal 3 s late lapses it (3 holds too, but a 1 s stall of a loaded machine would lapse it).
 */
const TTL = 6

const key = (order: string) => CorrelationKey.make("order", order)

const go = (order: string) =>
  new InboundEvent({ source: "test", id: `go-${order}`, kind: "queued.go", correlation: [key(order)], payload: {} })

const queued = (backend: Backend.Backend) =>
  Effect.gen(function* () {
    const counter = new Support.Counter()
    const latch = yield* Deferred.make<void>()
    // Run 1's act holds the only permit until the latch opens.
    const act = Support.acting("queued.act", { mutates: true, recovery: Run.Recovery.Retry() }, (n) =>
      Effect.zipRight(
        Effect.sync(() => counter.bump(`act:${n}`)),
        Effect.as(n === 1 ? Deferred.await(latch) : Effect.void, { ok: "act", n }),
      ),
    )
    const def = RunDefinition.make({
      capability: "queued.wake",
      input: Schema.Struct({ order: Schema.String, n: Schema.Number }),
      output: Schema.Unknown,
      plan: [
        Step.make({
          name: "wait",
          body: (input: { readonly order: string; readonly n: number }) =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.deadline("go", Deadline.days(3))
              yield* cx.awaitEvent({ kind: "queued.go", correlation: [key(input.order)], deadline: "go" })
              return (yield* cx.perform(act, { n: input.n })).n
            }),
        }),
      ],
    })
    const live = Support.runtime(backend, [def], { leaseTtlSecs: TTL, wakeConcurrency: 1 })
    const orders = [`a-${Math.random()}`, `b-${Math.random()}`] as const
    yield* Support.on(live)(
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const [a, b] = yield* Effect.forEach(orders, (order, i) =>
          rt.runCorrelated(def, Run.labeled({ order, n: i + 1 }, "test"), "order", [key(order)]),
        )
        if (a === undefined || b === undefined) return expect.fail("two runs admitted")
        expect([a.status._tag, b.status._tag]).toEqual(["Suspended", "Suspended"])
        expect(yield* rt.deliver(go(orders[0]))).toEqual(Runtime.Delivered.Resumed({ run: a.run }))
        // A holds the permit once its act has started.
        yield* Effect.suspend(() => (counter.get("act:1") === 1 ? Effect.void : Effect.fail("not yet"))).pipe(
          Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("10 seconds"))),
          Effect.orDie,
        )
        expect(yield* rt.deliver(go(orders[1]))).toEqual(Runtime.Delivered.Resumed({ run: b.run }))
        // Over twice the TTL, nobody but the owner touches the runs: a lease that lapses stays
        // listed until someone takes it, so a poll cannot miss it (a sweeper would take B over).
        const listed: Array<ReadonlyArray<RunId>> = []
        yield* Effect.flatMap(JournalStore, (j) => j.abandonedRuns(10_000)).pipe(
          Effect.tap((runs) => Effect.sync(() => listed.push(runs))),
          Effect.repeat(Schedule.spaced("250 millis").pipe(Schedule.upTo(`${2 * TTL + 1} seconds`))),
        )
        // B has not run: its only way to the permit is through A, still blocked.
        expect(counter.get("act:2")).toBe(0)
        expect(listed.length).toBeGreaterThan(0)
        expect(listed.filter((runs) => runs.includes(b.run) || runs.includes(a.run))).toEqual([])
        yield* Deferred.succeed(latch, undefined)
        yield* rt.idle
        for (const r of [a.run, b.run]) expect(yield* Support.concludedAs(r, "succeeded")).toBe(true)
        expect([counter.get("act:1"), counter.get("act:2")]).toEqual([1, 1])
      }),
    )
  }).pipe(Backend.asFreshTenant)

export const suite = (backend: Backend.Backend) =>
  describe("queued wake-ups", () => {
    it.live(
      "a woken run queued behind the only wake permit keeps its lease: never listed abandoned, its act run once",
      () => queued(backend),
    )
  })
