/**
 * §7.3 budgets: every limit label the runtime can reach, a metered limit passed by one operation
 * at most, exhaustion as a pause (`BudgetRefused`, `Exhausted`, unsealed) lifted by `raiseBudget`
 * (`BudgetReadmitted`) without repeating a journaled act, and the forbidden ceilings of 0 (§7.11).
 */
import { describe, it } from "@effect/vitest"
import { Clock, Effect, Schema } from "effect"
import { expect } from "vitest"
import * as Quota from "../../src/domain/Quota.js"
import * as Run from "../../src/domain/Run.js"
import { InvalidBudget } from "../../src/errors/RuntimeError.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const Input = Schema.Struct({ n: Schema.Number })

/** A step performing `kinds` one after another, answering how many it performed. */
const performing = (name: string, kinds: ReadonlyArray<{ readonly kind: string; readonly mutates: boolean }>) =>
  Step.make({
    name,
    body: () =>
      Effect.gen(function* () {
        const cx = yield* StepCtx
        for (const [i, kind] of kinds.entries()) yield* cx.perform(kind as unknown as Support.Kind, { n: i })
        return kinds.length
      }),
  })

const definition = (capability: string, plan: ReadonlyArray<RunDefinition.PlanEntry>, budget: Run.Budget) =>
  RunDefinition.make({ capability, input: Input, output: Schema.Number, plan, budget })

/** A non-mutating kind that counts its acts and spends `spend` each time. */
const spending = (counter: Support.Counter, name: string, spend: Quota.Spend) =>
  Support.acting(name, { mutates: false, spend: () => spend }, (n) =>
    Effect.sync(() => {
      counter.bump(name)
      return { ok: name, n }
    }),
  )

/** The real clock, moved on by `skip`: a run's wallclock meter without waiting or a TestClock. */
const skewed = () => {
  const base = Clock.make()
  let offset = 0
  const millis = () => base.unsafeCurrentTimeMillis() + offset
  const nanos = () => base.unsafeCurrentTimeNanos() + BigInt(offset) * 1_000_000n
  const clock: Clock.Clock = {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    currentTimeMillis: Effect.sync(millis),
    unsafeCurrentTimeNanos: nanos,
    currentTimeNanos: Effect.sync(nanos),
    sleep: (duration) => base.sleep(duration),
  }
  return {
    clock,
    skip: (ms: number) => {
      offset += ms
    },
  }
}

const start = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 0 }, "test")))

/** The run was refused on `limit` having used `used`, paused: journaled, Exhausted, concluded `exhausted`, unsealed. */
const expectPaused = (result: Runtime.RunResult<unknown>, limit: Run.LimitLabel, used: number) =>
  Effect.gen(function* () {
    expect(result.status).toEqual(Run.RunStatus.Exhausted({ limit }))
    const records = yield* Support.journalOf(result.run)
    expect(Support.recordsOfKind(records, "BudgetRefused").map((r) => r.kind)).toEqual([
      { kind: "BudgetRefused", limit, used },
    ])
    expect(Support.recordsOfKind(records, "RunSealed").map((r) => r.kind.outcome)).toEqual(["exhausted"])
    expect(yield* Support.concludedAs(result.run, "exhausted")).toBe(true)
  })

export const suite = (backend: Backend.Backend) =>
  describe("budgets", () => {
    describe("limit labels", () => {
      it.live("steps: a ceiling of 2 runs two steps, effects included, and refuses the third", () => {
        const counter = new Support.Counter()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const def = definition(
          "budget.steps",
          [performing("one", [a]), performing("two", [a]), performing("three", [a])],
          Run.budget({ maxSteps: 2 }),
        )
        return Effect.gen(function* () {
          const result = yield* start(def)
          yield* expectPaused(result, "steps", 2)
          expect(counter.get("budget.a")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("effects: a ceiling of 2 performs two and refuses the third", () => {
        const counter = new Support.Counter()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const def = definition("budget.effects", [performing("one", [a, a, a])], Run.budget({ maxEffects: 2 }))
        return Effect.gen(function* () {
          const result = yield* start(def)
          yield* expectPaused(result, "effects", 2)
          expect(counter.get("budget.a")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("tokens: an effect's spend is metered, and the ceiling is passed by one operation at most", () => {
        const counter = new Support.Counter()
        const llm = spending(counter, "budget.llm", new Quota.Spend({ tokens: 10, minorUnits: 0 }))
        const def = definition("budget.tokens", [performing("one", [llm, llm, llm])], Run.budget({ maxTokens: 15 }))
        return Effect.gen(function* () {
          const result = yield* start(def)
          // 10 is under 15, so the second call goes; 20 has passed it, so the third does not.
          yield* expectPaused(result, "tokens", 20)
          expect(counter.get("budget.llm")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("money: an effect's minor units are metered under the label money", () => {
        const counter = new Support.Counter()
        const pay = spending(counter, "budget.pay", new Quota.Spend({ tokens: 0, minorUnits: 250 }))
        const def = definition("budget.money", [performing("one", [pay, pay, pay])], Run.budget({ maxMinorUnits: 500 }))
        return Effect.gen(function* () {
          const result = yield* start(def)
          yield* expectPaused(result, "money", 500)
          expect(counter.get("budget.pay")).toBe(2)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("wallclock: time since admission, read from the clock, refuses the next operation", () => {
        const counter = new Support.Counter()
        const clock = skewed()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const slow = Step.make({
          name: "slow",
          body: () =>
            Effect.gen(function* () {
              const cx = yield* StepCtx
              yield* cx.perform(a, { n: 1 })
              yield* Effect.sync(() => clock.skip(6_000))
              yield* cx.perform(a, { n: 2 })
            }),
        })
        const def = definition("budget.wallclock", [slow], Run.budget({ maxWallclockSecs: 5 }))
        return Effect.gen(function* () {
          const result = yield* start(def)
          // Whole seconds on both sides: the 6 s skip, plus 1 when the real time between admission
          // and the second act crossed a second boundary (a slow commit on a loaded machine).
          const [refused] = Support.recordsOfKind(yield* Support.journalOf(result.run), "BudgetRefused")
          const used =
            refused?.kind.kind === "BudgetRefused" && typeof refused.kind.used === "number" ? refused.kind.used : -1
          expect([6, 7]).toContain(used)
          yield* expectPaused(result, "wallclock", used)
          expect(counter.get("budget.a")).toBe(1)
        }).pipe(Support.on(Support.runtime(backend, [def])), Effect.withClock(clock.clock), Backend.asFreshTenant)
      })
    })

    describe("raiseBudget", () => {
      it.live("appends BudgetReadmitted and resumes the run to the end without repeating a journaled act", () => {
        const counter = new Support.Counter()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const b = Support.counting(counter, "budget.b", { mutates: true })
        const c = Support.counting(counter, "budget.c", { mutates: false })
        const def = definition(
          "budget.raise",
          [performing("one", [a, c]), performing("two", [b])],
          Run.budget({ maxEffects: 2 }),
        )
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const paused = yield* start(def)
          yield* expectPaused(paused, "effects", 2)
          const raised = yield* rt.raiseBudget(paused.run, { maxEffects: 10 })
          expect(raised.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect([counter.get("budget.a"), counter.get("budget.c"), counter.get("budget.b")]).toEqual([1, 1, 1])
          const records = yield* Support.journalOf(paused.run)
          expect(Support.recordsOfKind(records, "BudgetReadmitted").map((r) => r.kind.limit)).toEqual([
            { maxEffects: 10 },
          ])
          const refused = records.findIndex((r) => r.kind.kind === "BudgetRefused")
          const readmitted = records.findIndex((r) => r.kind.kind === "BudgetReadmitted")
          expect(refused).toBeGreaterThan(0)
          expect(readmitted).toBeGreaterThan(refused)
          expect(yield* Support.concludedAs(paused.run, "succeeded")).toBe(true)
          const head = yield* Effect.flatMap(JournalStore, (j) => j.verify(paused.run))
          expect(head.seq).toBe(records.length)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })

      it.live("a raise that is still too low pauses the run again on the same limit", () => {
        const counter = new Support.Counter()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const def = definition("budget.raise-low", [performing("one", [a, a, a, a])], Run.budget({ maxEffects: 1 }))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const paused = yield* start(def)
          const again = yield* rt.raiseBudget(paused.run, { maxEffects: 3 })
          expect(again.status).toEqual(Run.RunStatus.Exhausted({ limit: "effects" }))
          expect(counter.get("budget.a")).toBe(3)
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })

    describe("ceilings of 0", () => {
      it("are refused with InvalidBudget when the budget is built, except maxReplans and maxDenials", () => {
        const refused = (input: Run.BudgetInput) => {
          try {
            Run.budget(input)
            return undefined
          } catch (e) {
            return e
          }
        }
        const labels: ReadonlyArray<[keyof Run.BudgetInput, Run.LimitLabel]> = [
          ["maxSteps", "steps"],
          ["maxEffects", "effects"],
          ["maxTokens", "tokens"],
          ["maxMinorUnits", "money"],
          ["maxWallclockSecs", "wallclock"],
        ]
        for (const [field, limit] of labels) {
          expect(refused({ [field]: 0 })).toEqual(new InvalidBudget({ limit }))
        }
        expect(refused({ maxReplans: 0, maxDenials: 0 })).toBeUndefined()
      })

      it.live("are refused with InvalidBudget by raiseBudget, which then writes nothing", () => {
        const counter = new Support.Counter()
        const a = Support.counting(counter, "budget.a", { mutates: true })
        const def = definition("budget.raise-zero", [performing("one", [a, a])], Run.budget({ maxEffects: 1 }))
        return Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const paused = yield* start(def)
          const before = (yield* Support.journalOf(paused.run)).length
          const error = yield* Effect.flip(rt.raiseBudget(paused.run, { maxEffects: 0 }))
          expect(error).toEqual(new InvalidBudget({ limit: "effects" }))
          expect((yield* Support.journalOf(paused.run)).length).toBe(before)
          expect(counter.get("budget.a")).toBe(1)
          const raised = yield* rt.raiseBudget(paused.run, { maxEffects: 5, maxReplans: 0, maxDenials: 0 })
          expect(raised.status._tag).toBe("Succeeded")
        }).pipe(Support.on(Support.runtime(backend, [def])), Backend.asFreshTenant)
      })
    })
  })
