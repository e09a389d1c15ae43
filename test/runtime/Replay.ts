/**
 * §7.1–§7.2 replay: Resume replays journaled outcomes without acting and then goes live; a changed
 * definition is non-determinism, quarantined on Resume with the diff; Strict reports whether a
 * definition reproduces its journal, fails with `ReplayOverrun` past its end, and writes nothing.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { expect } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import * as EffectKey from "../../src/domain/EffectKey.js"
import type * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import * as EffectKind from "../../src/runtime/EffectKind.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Backend from "../support/Backend.js"
import * as Snapshot from "./Snapshot.js"
import * as Support from "./Support.js"

/** How a later definition differs from the one that wrote the journal. */
type Change = "none" | "args" | "kind" | "inserted"

/**
 * A run in a case: read and write the case state, register a deadline, note, perform `test.replay.a`
 * and draw a random number, then a second step that fails while `failing.value` is set.
 */
const definition = (counter: Support.Counter, change: Change, failing: { value: boolean }) => {
  const kind = (name: string) => Support.counting(counter, name, { mutates: true, recovery: Run.Recovery.Retry() })
  const [a, b, c] = [kind("test.replay.a"), kind("test.replay.b"), kind("test.replay.c")]
  const prepare = Step.make({
    name: "prepare",
    role: Step.Unnecessary,
    body: (input: { readonly n: number }) =>
      Effect.gen(function* () {
        const cx = yield* StepCtx
        const { version } = yield* cx.caseState
        yield* cx.putCaseState(version, { seen: input.n })
        yield* cx.deadline("reply", Deadline.minutes(30))
        yield* cx.note("prepared")
        if (change === "inserted") yield* cx.perform(c, { n: 0 })
        yield* cx.perform(change === "kind" ? b : a, { n: change === "args" ? 2 : 1 })
        return yield* cx.random
      }),
  })
  // The second step answers the first one's random number.
  const finish = Step.make({
    name: "finish",
    role: Step.Unnecessary,
    body: (_input: { readonly n: number }, prior) =>
      failing.value ? Effect.fail("not yet") : Effect.succeed(prior.of(prepare)),
  })
  return RunDefinition.make({
    capability: "replay.case",
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: [prepare, finish],
  })
}

const admit = (def: RunDefinition.Any) =>
  Effect.flatMap(Runtime.Runtime, (rt) =>
    rt.runCorrelated(def, Run.labeled({ n: 1 }, "test"), "replay", [CorrelationKey.make("order", crypto.randomUUID())]),
  )

const started = (records: ReadonlyArray<Journal.Record>, kind: string) =>
  Support.ofKind(records, "EffectStarted").find((s) => (s.kind.descriptor as { kind: string }).kind === kind)

export const suite = (backend: Backend.Backend) =>
  describe("replay", () => {
    const setup = (change: Change, failing = true) => {
      const counter = new Support.Counter()
      const flag = { value: failing }
      const def = definition(counter, "none", flag)
      return { counter, flag, def, changed: definition(counter, change, { value: false }) }
    }

    describe("Resume", () => {
      it.live("replays journaled outcomes without acting, then goes live", () => {
        const { counter, flag, def } = setup("none")
        return Effect.gen(function* () {
          const first = yield* Support.on(Support.runtime(backend, [def]))(admit(def))
          expect(first.status._tag).toBe("Failed")
          flag.value = false
          const resumed = yield* Support.on(Support.runtime(backend, [def]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(first.run)),
          )
          expect(resumed.status._tag).toBe("Succeeded")
          expect(counter.get("test.replay.a")).toBe(1)
          const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
          // The random number is the journaled one, and the case state was written once.
          const random = Support.ofKind(records, "EffectDone").find((d) => d.kind.source === "random.next")?.kind.output
          expect(Option.getOrUndefined(resumed.output)).toBe(random)
          const kase = yield* Effect.provide(
            Effect.flatMap(CaseStore, (cases) => cases.case(Option.getOrThrow(first.case))),
            backend.layer,
          )
          expect(Option.getOrThrow(kase).version).toBe(1)
          expect(Support.ofKind(records, "EffectStarted").map((s) => s.kind.descriptor)).toHaveLength(6)
        }).pipe(Backend.asFreshTenant)
      })

      for (const change of ["args", "kind", "inserted"] as const) {
        it.live(
          `a changed definition (${change}) quarantines with the diff: seq, expected and offered key and kind`,
          () => {
            const { counter, def, changed } = setup(change)
            return Effect.gen(function* () {
              const first = yield* Support.on(Support.runtime(backend, [def]))(admit(def))
              expect(first.status._tag).toBe("Failed")
              const resumed = yield* Support.on(Support.runtime(backend, [changed]))(
                Effect.flatMap(Runtime.Runtime, (rt) => rt.resume(first.run)),
              )
              const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
              const journaled = started(records, "test.replay.a")
              const ordinal = (journaled?.kind.descriptor as { ordinal: number } | undefined)?.ordinal ?? -1
              const offered = {
                args: ["test.replay.a", 2],
                kind: ["test.replay.b", 1],
                inserted: ["test.replay.c", 0],
              }[change] as [string, number]
              const offeredKey = EffectKey.derive({
                step: journaled?.record.step as never,
                phase: "forward",
                ordinal,
                attempt: 1,
                kind: offered[0],
                args: { n: offered[1] },
              })
              const expectedKey = Option.getOrThrow(journaled?.record.effectKey ?? Option.none())
              expect(resumed.status._tag).toBe("Quarantined")
              const message = resumed.status._tag === "Quarantined" ? resumed.status.message : ""
              for (const part of [
                `seq ${journaled?.record.seq}`,
                `test.replay.a ek:${expectedKey}`,
                `${offered[0]} ek:${offeredKey}`,
              ]) {
                expect(message).toContain(part)
              }
              const sealed = Support.ofKind(records, "RunSealed").at(-1)?.kind
              expect(sealed?.outcome).toBe("quarantined")
              expect(sealed?.reason).toBe(message)
              // Nothing of the changed definition was performed, and nothing was performed twice.
              expect([
                counter.get("test.replay.a"),
                counter.get("test.replay.b"),
                counter.get("test.replay.c"),
              ]).toEqual([1, 0, 0])
            }).pipe(Backend.asFreshTenant)
          },
        )
      }
    })

    describe("Strict", () => {
      it.live("a changed definition is reported with the diff, and nothing is written anywhere", () => {
        const { counter, def, changed } = setup("args")
        return Effect.gen(function* () {
          const first = yield* Support.on(Support.runtime(backend, [def]))(admit(def))
          const subjects = { runs: [first.run], cases: [Option.getOrThrow(first.case)] }
          const before = yield* Snapshot.of(backend, subjects)
          const report = yield* Support.on(Support.runtime(backend, [changed]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(first.run)),
          )
          expect(report.reproduced).toBe(false)
          const records = yield* Effect.provide(Support.journalOf(first.run), backend.layer)
          const journaled = started(records, "test.replay.a")
          const divergence = Option.getOrThrow(report.divergence)
          expect(divergence.seq).toBe(journaled?.record.seq)
          expect(divergence.expected).toEqual({
            key: Option.getOrThrow(journaled?.record.effectKey ?? Option.none()),
            kind: "test.replay.a",
          })
          expect(divergence.offered.kind).toBe("test.replay.a")
          expect(divergence.offered.key).not.toBe(divergence.expected.key)
          expect(yield* Snapshot.of(backend, subjects)).toEqual(before)
          expect(counter.get("test.replay.a")).toBe(1)
        }).pipe(Backend.asFreshTenant)
      })

      it.live("a reproducing definition gives reproduced: true, and nothing is written anywhere", () => {
        const { counter, def } = setup("none", false)
        return Effect.gen(function* () {
          const first = yield* Support.on(Support.runtime(backend, [def]))(admit(def))
          expect(first.status._tag).toBe("Succeeded")
          const subjects = { runs: [first.run], cases: [Option.getOrThrow(first.case)] }
          const before = yield* Snapshot.of(backend, subjects)
          const report = yield* Support.on(Support.runtime(backend, [def]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(first.run)),
          )
          expect(report.reproduced).toBe(true)
          expect(report.status).toEqual(first.status)
          expect(report.journaled).toEqual(Option.some("succeeded"))
          expect(Option.isNone(report.divergence)).toBe(true)
          expect(yield* Snapshot.of(backend, subjects)).toEqual(before)
          expect(counter.get("test.replay.a")).toBe(1)
          // Not even a lease was taken: the next acquire follows the admission's epoch.
          const lease = yield* Effect.provide(
            Effect.flatMap(JournalStore, (j) => j.acquire(first.run, "probe", 1)),
            backend.layer,
          )
          expect(lease.epoch).toBe(2)
        }).pipe(Backend.asFreshTenant)
      })

      it.live("past the end of history fails with ReplayOverrun, writing nothing", () => {
        const { counter, def } = setup("none", false)
        return Effect.gen(function* () {
          const crashed = yield* Support.on(
            Support.runtime(backend, [def], { crash: TestRuntime.crashAt("after_record", "test.replay.a") }),
          )(Effect.flip(admit(def)))
          expect(crashed._tag).toBe("Crashed")
          const run = (crashed as Runtime.Crashed).run
          const head = yield* Effect.provide(
            Effect.flatMap(JournalStore, (j) => j.head(run)),
            backend.layer,
          )
          const subjects = { runs: [run], cases: [] }
          const before = yield* Snapshot.of(backend, subjects)
          const overrun = yield* Support.on(Support.runtime(backend, [def]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(run)).pipe(Effect.flip),
          )
          expect(overrun._tag).toBe("ReplayOverrun")
          expect(overrun._tag === "ReplayOverrun" && overrun.seq).toBe(head.seq + 1)
          expect(yield* Snapshot.of(backend, subjects)).toEqual(before)
          expect(counter.get("test.replay.a")).toBe(1)
        }).pipe(Backend.asFreshTenant)
      })

      it.live("an in-doubt effect fails with ReplayOverrun: neither acted nor probed", () => {
        const counter = new Support.Counter()
        const { kind } = Support.witnessing(counter, "test.replay.doubt", {
          mutates: true,
          recovery: Run.Recovery.Reconcile(),
          probe: () => Effect.sync(() => counter.bump("probe")).pipe(Effect.as(EffectKind.Verdict.DidNotHappen())),
        })
        const def = Support.sequence("replay.doubt", [kind])
        return Effect.gen(function* () {
          const crashed = yield* Support.on(
            Support.runtime(backend, [def], { crash: TestRuntime.crashAt("after_act", "test.replay.doubt") }),
          )(Effect.flip(Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))))
          const run = (crashed as Runtime.Crashed).run
          const before = yield* Snapshot.of(backend, { runs: [run], cases: [] })
          const overrun = yield* Support.on(Support.runtime(backend, [def]))(
            Effect.flatMap(Runtime.Runtime, (rt) => rt.replay(run)).pipe(Effect.flip),
          )
          expect(overrun._tag).toBe("ReplayOverrun")
          expect([counter.get("test.replay.doubt"), counter.get("probe")]).toEqual([1, 0])
          expect(yield* Snapshot.of(backend, { runs: [run], cases: [] })).toEqual(before)
        }).pipe(Backend.asFreshTenant)
      })
    })
  })
