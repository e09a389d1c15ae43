/**
 * Admission and fencing under concurrency (issue 14, Acceptance): they prove something only where
 * writers really interleave (`capabilities.concurrentWriters`, PostgreSQL); the others run the
 * same races serialised and must pass too. Each runs through a small pool.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, FiberId, Option, Schedule, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import * as Backend from "../support/Backend.js"
import { fire } from "../support/Races.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })
const N = 16
const POOL = 4

const oneStep = (capability: string, body: Effect.Effect<number, unknown, StepCtx | QuotaStore | Tenant>) =>
  RunDefinition.make({
    capability,
    input: Input,
    output: Schema.Number,
    plan: [Step.make({ name: "only", body: () => body })],
  })

export const suite = (backend: Backend.Backend) =>
  describe("races", () => {
    const counter = new Support.Counter()
    const act = Support.counting(counter, "race.act", { mutates: true })
    const plain = oneStep(
      "race.plain",
      Effect.map(
        Effect.flatMap(StepCtx, (cx) => cx.perform(act, { n: 1 })),
        (a) => a.n,
      ),
    )

    it.live(`${N} concurrent runCorrelated with one new key open one case holding all ${N} runs`, () =>
      Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const key = CorrelationKey.make("order", "race-1")
        const results = yield* fire(N, (i) => rt.runCorrelated(plain, Run.labeled({ n: i }, "test"), "order", [key]))
        const cases = new Set(results.map((r) => Option.getOrThrow(r.case)))
        expect(cases.size).toBe(1)
        const [kase] = [...cases]
        const stored = Option.getOrThrow(yield* Effect.flatMap(CaseStore, (c) => c.case(kase as never)))
        expect([...stored.runs].sort()).toEqual(results.map((r) => r.run).sort())
        let opened = 0
        for (const r of results) {
          const bound = Support.recordsOfKind(yield* Support.journalOf(r.run), "CaseBound")
          expect(bound.length).toBe(1)
          if (bound[0]?.kind.opened === true) opened += 1
        }
        expect(opened).toBe(1)
      }).pipe(Support.on(Support.runtimeOver(backend.pooled(POOL), [plain])), Backend.asFreshTenant),
    )

    it.live(`${N} concurrent …Once with one key admit exactly one run; the others learn which`, () => {
      const local = new Support.Counter()
      const once = oneStep(
        "race.once",
        Effect.map(
          Effect.flatMap(StepCtx, (cx) =>
            cx.perform(Support.counting(local, "race.once", { mutates: true }), { n: 1 }),
          ),
          (a) => a.n,
        ),
      )
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        // Two inputs among the callers: a loser sent the winner's input (a retry: DuplicateAdmission)
        // or the other one (a mistake: AdmissionConflict); either way it names the winner.
        const inputOf = (i: number) => i % 2
        const results = yield* fire(N, (i) =>
          Effect.either(rt.runOnce(once, Run.labeled({ n: inputOf(i) }, "test"), "one-key")),
        )
        const admitted = results.flatMap((r, i) => (Either.isRight(r) ? [{ result: r.right, n: inputOf(i) }] : []))
        expect(admitted.length).toBe(1)
        const winner = admitted[0] as { readonly result: Runtime.RunResult<number>; readonly n: number }
        const refused = results.flatMap((r, i) => (Either.isLeft(r) ? [{ error: r.left, n: inputOf(i) }] : []))
        expect(refused.length).toBe(N - 1)
        for (const { error, n } of refused) {
          expect(error).toMatchObject({
            _tag: n === winner.n ? "DuplicateAdmission" : "AdmissionConflict",
            key: "one-key",
            run: winner.result.run,
          })
        }
        expect(local.get("race.once")).toBe(1)
      }).pipe(Support.on(Support.runtimeOver(backend.pooled(POOL), [once])), Backend.asFreshTenant)
    })

    it.live(`maxConcurrentRuns = 4: of ${N} concurrent runs held inside their acts, 4 run and 12 are refused`, () => {
      const LIMIT = 4
      let active = 0
      let peak = 0
      let refusedCount = 0
      const sampled: Array<number> = []
      const gate = Deferred.unsafeMake<void>(FiberId.none)
      // The gate opens once every run is either inside its act or refused, so the admitted ones
      // overlap for sure; with five admitted it would never open and the test would fail.
      const settle = Effect.suspend(() =>
        active + refusedCount === N ? Deferred.succeed(gate, undefined) : Effect.succeed(false),
      )
      const holding = Support.acting<QuotaStore | Tenant>("race.hold", { mutates: false }, (n) =>
        Effect.gen(function* () {
          active += 1
          peak = Math.max(peak, active)
          sampled.push(yield* Effect.orDie(Effect.flatMap(QuotaStore, (q) => q.running())))
          yield* settle
          yield* Deferred.await(gate)
          active -= 1
          return { ok: "held", n }
        }),
      )
      const held = oneStep(
        "race.quota",
        Effect.map(
          Effect.flatMap(StepCtx, (cx) => cx.perform(holding, { n: 1 })),
          (a) => a.n,
        ),
      )
      const quota = new Quota.TenantQuota({
        maxConcurrentRuns: Option.some(LIMIT),
        maxTokensPerPeriod: Option.none(),
        maxMinorUnitsPerPeriod: Option.none(),
        period: "monthly",
      })
      return Effect.gen(function* () {
        const rt = yield* Runtime.Runtime
        const results = yield* fire(N, (i) =>
          Effect.either(rt.run(held, Run.labeled({ n: i }, "test"))).pipe(
            Effect.tap((r) =>
              Either.isLeft(r)
                ? Effect.zipRight(
                    Effect.sync(() => {
                      refusedCount += 1
                    }),
                    settle,
                  )
                : Effect.void,
            ),
          ),
        )
        const refused = results.filter(Either.isLeft).map((r) => r.left)
        expect(refused.length).toBe(N - LIMIT)
        for (const e of refused) expect(e).toMatchObject({ _tag: "TooManyRuns", running: LIMIT })
        expect(results.filter(Either.isRight).length).toBe(LIMIT)
        expect(peak).toBe(LIMIT)
        expect(sampled.length).toBe(LIMIT)
        for (const s of sampled) expect(s).toBeLessThanOrEqual(LIMIT)
        expect(yield* Effect.flatMap(QuotaStore, (q) => q.running())).toBe(0)
      }).pipe(
        Support.on(Support.runtimeOver(backend.pooled(POOL), [held], { quota: () => quota })),
        Backend.asFreshTenant,
      )
    })

    it.live(
      "two runtimes on one database: once the other acquires the lapsed lease, the first is Fenced and writes nothing more",
      () => {
        const gate = Deferred.unsafeMake<void>(FiberId.none)
        const inside = Deferred.unsafeMake<RunId>(FiberId.none)
        const local = new Support.Counter()
        const first = Support.counting(local, "race.first", { mutates: true })
        const blocked = Support.acting("race.blocked", { mutates: true }, (n) =>
          Effect.as(Deferred.await(gate), { ok: "late", n }),
        )
        const def = oneStep(
          "race.fence",
          Effect.gen(function* () {
            const cx = yield* StepCtx
            yield* cx.perform(first, { n: 1 })
            yield* Deferred.succeed(inside, cx.run)
            yield* cx.perform(blocked, { n: 2 })
            yield* cx.perform(first, { n: 3 })
            return 1
          }),
        )
        return Effect.gen(function* () {
          // The first runtime's lease is one second long; renewing it a second later finds it lapsed.
          const running = yield* Effect.flatMap(Runtime.Runtime, (rt) =>
            rt.run(def, Run.labeled({ n: 1 }, "test")),
          ).pipe(
            Support.on(Support.runtimeOver(backend.pooled(2), [def], { owner: "first", leaseTtlSecs: 1 })),
            Effect.either,
            Effect.fork,
          )
          const run = yield* Deferred.await(inside)
          const taken = yield* Effect.flatMap(JournalStore, (j) => j.acquire(run, "second", 30)).pipe(
            Effect.retry({ while: (e) => e._tag === "LeaseHeld", schedule: Schedule.spaced("100 millis"), times: 60 }),
            Support.on(Support.runtimeOver(backend.pooled(2), [def], { owner: "second" })),
          )
          expect(taken.epoch).toBe(2)
          const before = yield* Effect.flatMap(JournalStore, (j) => j.head(run)).pipe(
            Support.on(Support.runtimeOver(backend.pooled(2), [def])),
          )
          yield* Deferred.succeed(gate, undefined)
          const outcome = yield* Fiber.join(running)
          expect(Either.isLeft(outcome) ? outcome.left : outcome.right).toMatchObject({ _tag: "Fenced" })
          expect(local.get("race.first")).toBe(1)
          const after = yield* Effect.flatMap(JournalStore, (j) =>
            Effect.all({ head: j.head(run), records: j.read(run, 1) }),
          ).pipe(Support.on(Support.runtimeOver(backend.pooled(2), [def])))
          expect(after.head).toEqual(before)
          expect(after.records.some((r) => r.kind.kind === "RunSealed")).toBe(false)
        }).pipe(Backend.asFreshTenant)
      },
    )
  })
