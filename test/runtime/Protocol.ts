/**
 * §7.1: announce, act, record; keys; what a journal looks like after a run.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { type RunId, StepId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

export const suite = (backend: Backend.Backend) =>
  describe("protocol", () => {
    it.live("a run of two mutating effects journals admission, announce and outcome of each, and a seal", () => {
      const counter = new Support.Counter()
      const a = Support.counting(counter, "test.a", { mutates: true, recovery: Run.Recovery.Retry() })
      const b = Support.counting(counter, "test.b", { mutates: true })
      const def = RunDefinition.make({
        capability: "protocol.two",
        input: Schema.Struct({ n: Schema.Number }),
        output: Schema.Number,
        plan: [
          Step.make({
            name: "both",
            body: (input: { readonly n: number }) =>
              Effect.gen(function* () {
                const cx = yield* StepCtx
                const x = yield* cx.perform(a, { n: input.n })
                const y = yield* cx.perform(b, { n: x.n + 1 })
                return y.n
              }),
          }),
        ],
      })
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const result = yield* rt.run(def, Run.labeled({ n: 1 }, "test"))
        expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: 2 }))
        expect(counter.get("test.a")).toBe(1)
        expect(counter.get("test.b")).toBe(1)
        const journal = yield* JournalStore
        const kinds = (yield* journal.read(result.run, 1)).map((r) => r.kind.kind)
        expect(kinds).toEqual([
          "RunAdmitted",
          "PlanFrozen",
          "StepStarted",
          "EffectStarted",
          "EffectDone",
          "EffectStarted",
          "EffectDone",
          "StepFinished",
          "RunSealed",
        ])
        const head = yield* journal.verify(result.run)
        expect(head.seq).toBe(kinds.length)
        expect(
          Option.isSome(
            yield* journal
              .runsByOutcome("succeeded", 1000)
              .pipe(Effect.map((rs) => Option.fromNullable(rs.find((r) => r === result.run)))),
          ),
        ).toBe(true)
      }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
    })

    describe("keys", () => {
      it.live(
        "an effect's key is derived from step, phase, ordinal, attempt, kind and canonical arguments (§3.1)",
        () => {
          const counter = new Support.Counter()
          const a = Support.counting(counter, "test.key.a", { mutates: true, recovery: Run.Recovery.Retry() })
          const b = Support.counting(counter, "test.key.b", { mutates: false })
          const def = RunDefinition.make({
            capability: "protocol.keys",
            input: Schema.Struct({ n: Schema.Number }),
            output: Schema.Number,
            plan: [
              Step.make({ name: "first", body: () => Effect.flatMap(StepCtx, (cx) => cx.perform(a, { n: 1 })) }),
              Step.make({
                name: "second",
                body: () =>
                  Effect.gen(function* () {
                    const cx = yield* StepCtx
                    yield* cx.perform(a, { n: 1 })
                    return (yield* cx.perform(b, { n: 5 })).n
                  }),
              }),
            ],
          })
          return Effect.gen(function* () {
            const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 0 }, "test")))
            const started = Support.ofKind(yield* Support.journalOf(result.run), "EffectStarted")
            expect(started).toHaveLength(3)
            for (const { record } of started) {
              expect(Option.getOrThrow(record.effectKey)).toBe(Support.keyFromDescriptor(record))
            }
            // Recomputed from the parts alone, not from what the journal says they were.
            const expected = EffectKey.derive({
              step: StepId.make(1),
              phase: "forward",
              ordinal: 1,
              attempt: 1,
              kind: "test.key.b",
              args: { n: 5 },
            })
            expect(Option.getOrThrow(started[2]?.record.effectKey as Option.Option<string>)).toBe(expected)
            expect(started[2]?.kind.descriptor).toEqual({ kind: "test.key.b", ordinal: 1, args: { n: 5 } })
            // The same kind and arguments in another step is another effect.
            const keys = started.map(({ record }) => Option.getOrThrow(record.effectKey))
            expect(new Set(keys).size).toBe(3)
          }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
        },
      )
    })

    describe("announce, act, record", () => {
      it.live("a mutating announce is durable before its act starts", () => {
        let run: RunId | undefined
        const seenAtAct: Array<ReadonlyArray<string>> = []
        const write = Support.acting<JournalStore | Tenant>(
          "test.durable.write",
          { mutates: true, recovery: Run.Recovery.Retry() },
          (n) =>
            Effect.gen(function* () {
              const journal = yield* JournalStore
              const records = yield* Effect.orDie(journal.read(run as RunId, 1))
              seenAtAct.push(records.map((r) => r.kind.kind))
              const last = records[records.length - 1]
              expect(last?.kind.kind).toBe("EffectStarted")
              return { ok: Option.getOrThrow(last?.effectKey ?? Option.none()), n }
            }),
        )
        const def = RunDefinition.make({
          capability: "protocol.durable",
          input: Schema.Struct({ n: Schema.Number }),
          output: Schema.String,
          plan: [
            Step.make({
              name: "write",
              body: (input: { readonly n: number }) =>
                Effect.gen(function* () {
                  const cx = yield* StepCtx
                  run = cx.run
                  yield* cx.perform(write, { n: input.n })
                  return (yield* cx.perform(write, { n: input.n + 1 })).ok
                }),
            }),
          ],
        })
        return Effect.gen(function* () {
          const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
          expect(result.status._tag).toBe("Succeeded")
          const started = Support.ofKind(yield* Support.journalOf(result.run), "EffectStarted")
          // The act saw, through the store, the announcement of exactly the effect it was performing.
          expect(Option.getOrUndefined(result.output)).toBe(
            Option.getOrThrow(started[1]?.record.effectKey ?? Option.none()),
          )
          expect(seenAtAct).toEqual([
            ["RunAdmitted", "PlanFrozen", "StepStarted", "EffectStarted"],
            ["RunAdmitted", "PlanFrozen", "StepStarted", "EffectStarted", "EffectDone", "EffectStarted"],
          ])
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live(
        "a read's announcement is durable before it acts; admission, boundaries and outcomes ride with the next announcement",
        () => {
          let run: RunId | undefined
          const durableAtRead: Array<number> = []
          const read = Support.acting<JournalStore | Tenant>("test.ride.read", { mutates: false }, (n) =>
            Effect.gen(function* () {
              const journal = yield* JournalStore
              durableAtRead.push((yield* Effect.orDie(journal.read(run as RunId, 1))).length)
              return { ok: "read", n }
            }),
          )
          const counter = new Support.Counter()
          const a = Support.counting(counter, "test.ride.a", { mutates: true, recovery: Run.Recovery.Retry() })
          const b = Support.counting(counter, "test.ride.b", { mutates: true, recovery: Run.Recovery.Retry() })
          const def = RunDefinition.make({
            capability: "protocol.ride",
            input: Schema.Struct({ n: Schema.Number }),
            output: Schema.Number,
            plan: [
              Step.make({
                name: "all",
                body: (input: { readonly n: number }) =>
                  Effect.gen(function* () {
                    const cx = yield* StepCtx
                    run = cx.run
                    yield* cx.perform(read, { n: input.n })
                    yield* cx.perform(a, { n: 1 })
                    yield* cx.perform(read, { n: 2 })
                    return (yield* cx.perform(b, { n: 3 })).n
                  }),
              }),
            ],
          })
          const commits: Array<number> = []
          return Effect.gen(function* () {
            const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
            expect(result.status._tag).toBe("Succeeded")
            // Each read saw its own announcement durable (§7.11): the first with the admission and
            // the boundary it shared a commit with, the second after a's outcome, which rode with it.
            expect(durableAtRead).toEqual([4, 8])
            // Appends: [admission, boundary, read announced], [read done, a announced], [a done,
            // read announced], [read done, b announced], [b done, boundary, conclusion]: one commit
            // per effect before its act, and the conclusion's.
            expect(commits.filter((c) => c > 0)).toEqual([4, 2, 2, 2, 3])
            expect((yield* Support.journalOf(result.run)).length).toBe(13)
          }).pipe(Support.on(Support.runtime(Support.watchingCommits(backend, commits), [def])), Backend.asFreshTenant)
        },
      )
    })

    describe("a keyed two-effect run", () => {
      it.live(
        "commits three times: admission with the first announcement, an outcome with the next, the last with the seal",
        () => {
          const counter = new Support.Counter()
          const a = Support.counting(counter, "test.keyed.a", { mutates: true, recovery: Run.Recovery.Retry() })
          const b = Support.counting(counter, "test.keyed.b", { mutates: true, recovery: Run.Recovery.Retry() })
          const def = RunDefinition.make({
            capability: "protocol.keyed",
            input: Schema.Struct({ n: Schema.Number }),
            output: Schema.Number,
            plan: [
              Step.make({
                name: "both",
                body: (input: { readonly n: number }) =>
                  Effect.gen(function* () {
                    const cx = yield* StepCtx
                    const first = yield* cx.perform(a, { n: input.n })
                    return (yield* cx.perform(b, { n: first.n + 1 })).n
                  }),
              }),
            ],
          })
          const commits: Array<number> = []
          const others: Array<string> = []
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const key = `keyed-${Math.random()}`
            const result = yield* rt.run(def, Run.labeled({ n: 1 }, "test"), { admissionKey: key })
            expect(result.status._tag).toBe("Succeeded")
            // [admission, plan, boundary, a announced], [a done, b announced], [b done, boundary, seal].
            expect(commits.filter((c) => c > 0)).toEqual([4, 2, 3])
            // And nothing else: the lease, the halt and the step's cancellation check ride in those commits.
            expect(others).toEqual([])
            // The duplicate learns it from that first commit, which writes nothing, before any act.
            const again = yield* Effect.flip(rt.run(def, Run.labeled({ n: 1 }, "test"), { admissionKey: key }))
            expect(again).toMatchObject({ _tag: "DuplicateAdmission", run: result.run })
            expect([counter.get("test.keyed.a"), counter.get("test.keyed.b")]).toEqual([1, 1])
            // Its one attempt (the same four records), refused whole: the first run's journal is as it was.
            expect(commits.filter((c) => c > 0)).toEqual([4, 2, 3, 4])
            expect((yield* Support.journalOf(result.run)).length).toBe(9)
          }).pipe(
            Support.on(Support.runtime(Support.watchingCommits(backend, commits, others), [def])),
            Backend.asFreshTenant,
          )
        },
      )
    })

    describe("cx.all", () => {
      it.live(
        "ordinals are fixed by position, not by completion order; mutating announcements share one commit",
        () => {
          let run: RunId | undefined
          const firstMayFinish = Effect.runSync(Deferred.make<void>())
          const durableAtFast: Array<ReadonlyArray<string>> = []
          const slow = Support.acting("test.all.slow", { mutates: true, recovery: Run.Recovery.Retry() }, (n) =>
            Effect.as(Deferred.await(firstMayFinish), { ok: "slow", n }),
          )
          const fast = Support.acting<JournalStore | Tenant>(
            "test.all.fast",
            { mutates: true, recovery: Run.Recovery.Retry() },
            (n) =>
              Effect.gen(function* () {
                const journal = yield* JournalStore
                const records = yield* Effect.orDie(journal.read(run as RunId, 1))
                durableAtFast.push(records.map((r) => r.kind.kind))
                return { ok: "fast", n }
              }).pipe(Effect.ensuring(Deferred.succeed(firstMayFinish, undefined))),
          )
          const def = RunDefinition.make({
            capability: "protocol.all",
            input: Schema.Struct({ n: Schema.Number }),
            output: Schema.Array(Schema.String),
            plan: [
              Step.make({
                name: "both",
                body: () =>
                  Effect.gen(function* () {
                    const cx = yield* StepCtx
                    run = cx.run
                    const [x, y] = yield* cx.all([EffectKind.call(slow, { n: 1 }), EffectKind.call(fast, { n: 2 })])
                    const z = yield* cx.perform(fast, { n: 3 })
                    return [x.ok, y.ok, z.ok]
                  }),
              }),
            ],
          })
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const result = yield* rt.run(def, Run.labeled({ n: 0 }, "test"))
            // Answers come back by position.
            expect(result.status).toEqual(Run.RunStatus.Succeeded({ output: ["slow", "fast", "fast"] }))
            // Both announcements were durable, in one batch, before either act.
            expect(durableAtFast[0]).toEqual([
              "RunAdmitted",
              "PlanFrozen",
              "StepStarted",
              "EffectStarted",
              "EffectStarted",
            ])
            const records = yield* Support.journalOf(result.run)
            const started = Support.ofKind(records, "EffectStarted")
            const derived = (ordinal: number, kind: string, n: number) =>
              EffectKey.derive({ step: StepId.make(0), phase: "forward", ordinal, attempt: 1, kind, args: { n } })
            expect(started.map(({ record }) => Option.getOrThrow(record.effectKey))).toEqual([
              derived(0, "test.all.slow", 1),
              derived(1, "test.all.fast", 2),
              derived(2, "test.all.fast", 3),
            ])
            // The second finished first: its outcome is journaled before the first's.
            const done = Support.ofKind(records, "EffectDone").map(({ record }) => Option.getOrThrow(record.effectKey))
            expect(done).toEqual([
              derived(1, "test.all.fast", 2),
              derived(0, "test.all.slow", 1),
              derived(2, "test.all.fast", 3),
            ])
            // Replay matches by position, whatever order they finished in.
            const report = yield* rt.replay(result.run)
            expect(report.reproduced).toBe(true)
          }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
        },
      )
    })
  })
