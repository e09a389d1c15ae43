/**
 * §7.13 the replay gate: runs recorded on the backend, exported, and checked against a later
 * build's definitions without any store: one verdict per run, with the first differing point for
 * a changed definition, and the exit code the CLI gives.
 */
import { describe, it } from "@effect/vitest"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import { expect } from "vitest"
import * as Export from "../../src/archive/Export.js"
import * as Format from "../../src/archive/Format.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Deadline from "../../src/domain/Deadline.js"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Decision } from "../../src/domain/Task.js"
import * as ReplayGate from "../../src/runtime/ReplayGate.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Step from "../../src/runtime/Step.js"
import { StepCtx } from "../../src/runtime/StepCtx.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import { kind } from "../cli/replay/Orders.js"
import * as Backend from "../support/Backend.js"
import * as Support from "./Support.js"

const [a, b, c] = [kind("gate.a"), kind("gate.b"), kind("gate.c")]

/** How a later build differs from the one that recorded the runs. */
type Change = "none" | "args" | "first-args" | "inserted" | "extra-step"

/**
 * Two steps: the first performs `gate.a`, the second `gate.b` (when `sleeps`, after waiting on a
 * timer an hour away, so its runs stay open there).
 */
const definition = (change: Change, capability = "gate.orders", sleeps = false, version?: string) => {
  const first = Step.make({
    name: "first",
    body: (input: { readonly n: number }) =>
      Effect.flatMap(StepCtx, (cx) => cx.perform(a, { n: change === "first-args" ? input.n + 1 : input.n })),
  })
  const second = Step.make({
    name: "second",
    body: (input: { readonly n: number }) =>
      Effect.gen(function* () {
        const cx = yield* StepCtx
        if (sleeps) yield* cx.sleep(3600)
        if (change === "inserted") yield* cx.perform(c, { n: 0 })
        return yield* cx.perform(b, { n: change === "args" ? input.n + 1 : input.n })
      }),
  })
  const third = Step.make({
    name: "third",
    body: (input: { readonly n: number }) => Effect.flatMap(StepCtx, (cx) => cx.perform(c, { n: input.n })),
  })
  return RunDefinition.make({
    capability,
    ...(version === undefined ? {} : { version }),
    input: Schema.Struct({ n: Schema.Number }),
    output: Schema.Number,
    plan: change === "extra-step" ? [first, second, third] : [first, second],
  })
}

/** Records `count` runs of `def` on the backend and answers the tenant's export lines and the runs. */
const record = (backend: Backend.Backend, defs: ReadonlyArray<RunDefinition.Any>, count: number) =>
  Effect.gen(function* () {
    const runs: Array<RunId> = []
    for (let i = 0; i < count; i++) {
      const def = defs[i % defs.length] as RunDefinition.Any
      const result = yield* Support.on(Support.runtime(backend, defs))(
        Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: i + 1 }, "test"))),
      )
      runs.push(result.run)
    }
    const lines = yield* Stream.runCollect(Export.lines()).pipe(Effect.provide(backend.layer))
    // The export lists runs in id order.
    return { lines: Chunk.toReadonlyArray(lines), runs: runs.sort() }
  })

/** The gate's verdicts and summary for `lines` under `defs`, opening what `backend` sealed. */
const gateOn = (
  backend: Backend.Backend,
  lines: ReadonlyArray<string>,
  defs: ReadonlyArray<RunDefinition.Any>,
  filter?: ReplayGate.Filter,
) =>
  Effect.gen(function* () {
    const verdicts: Array<ReplayGate.Verdict> = []
    const summary = yield* ReplayGate.check(Stream.fromIterable(lines), {
      ...Backend.replayOpener(backend),
      ...(filter === undefined ? {} : { filter }),
      onVerdict: (v) => Effect.sync(() => verdicts.push(v)),
    }).pipe(Effect.provide(TestRuntime.replayLayer(defs)))
    return { verdicts, summary }
  })

const verdictsOf = (verdicts: ReadonlyArray<ReplayGate.Verdict>) => verdicts.map((v) => v.verdict)

export const suite = (backend: Backend.Backend) =>
  describe("replay gate", () => {
    const gate = (lines: ReadonlyArray<string>, defs: ReadonlyArray<RunDefinition.Any>, filter?: ReplayGate.Filter) =>
      gateOn(backend, lines, defs, filter)
    it.live("unchanged code: every run ok, exit 0", () =>
      Effect.gen(function* () {
        const { lines, runs } = yield* record(backend, [definition("none")], 3)
        const { verdicts, summary } = yield* gate(lines, [definition("none")])
        expect(verdicts.map((v) => [v.run, v.verdict])).toEqual(runs.map((r) => [r, "ok"]))
        expect(summary).toMatchObject({ checked: 3, ok: 3, nondeterministic: 0, incomplete: null, exit: 0 })
      }).pipe(Backend.asFreshTenant),
    )

    it.live("changed arguments: nondeterministic at the journaled effect, with recorded and asked keys", () =>
      Effect.gen(function* () {
        const { lines, runs } = yield* record(backend, [definition("none")], 2)
        const records = yield* Effect.provide(Support.journalOf(runs[0] as RunId), backend.layer)
        const journaled = Support.ofKind(records, "EffectStarted").find(
          (s) => (s.kind.descriptor as { kind: string }).kind === "gate.b",
        )
        if (journaled === undefined) throw new Error("no gate.b in the journal")
        const key = Option.getOrThrow(journaled.record.effectKey)
        const { verdicts, summary } = yield* gate(lines, [definition("args")])
        expect(verdictsOf(verdicts)).toEqual(["nondeterministic", "nondeterministic"])
        const first = verdicts[0]
        if (first?.verdict !== "nondeterministic") throw new Error("not a nondeterministic verdict")
        expect(first.run).toBe(runs[0])
        expect(first.at).toMatchObject({
          seq: journaled.record.seq,
          step: journaled.record.step,
          phase: "forward",
          ordinal: (journaled.kind.descriptor as { ordinal: number }).ordinal,
          effect_key: key,
          recorded: { kind: "gate.b", key },
        })
        expect(first.at?.asked.kind).toBe("gate.b")
        expect(first.at?.asked.key).not.toBe(first.at?.recorded.key)
        expect(summary).toMatchObject({ checked: 2, nondeterministic: 2, exit: 2 })
      }).pipe(Backend.asFreshTenant),
    )

    it.live("an inserted effect is caught at the point it was inserted", () =>
      Effect.gen(function* () {
        const { lines } = yield* record(backend, [definition("none")], 1)
        const { verdicts } = yield* gate(lines, [definition("inserted")])
        const v = verdicts[0]
        if (v?.verdict !== "nondeterministic") throw new Error(`expected nondeterministic, got ${v?.verdict}`)
        expect(v.at?.recorded.kind).toBe("gate.b")
        expect(v.at?.asked.kind).toBe("gate.c")
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a definition the build lacks: unknown-definition, exit 2; the other runs still checked", () =>
      Effect.gen(function* () {
        const known = definition("none")
        const other = definition("none", "gate.retired")
        const { lines } = yield* record(backend, [known, other], 2)
        const { verdicts, summary } = yield* gate(lines, [known])
        expect(verdicts.map((v) => v.verdict).sort()).toEqual(["ok", "unknown-definition"])
        const unknown = verdicts.find((v) => v.verdict === "unknown-definition")
        expect(unknown).toMatchObject({ definition: "gate.retired", version: "1", registered: null })
        // The same definition at another version: this build would leave the run alone.
        const atTwo = yield* gate(lines, [definition("none", "gate.orders", false, "2")])
        expect(atTwo.verdicts.find((v) => "definition" in v && v.definition === "gate.orders")).toMatchObject({
          verdict: "unknown-definition",
          version: "1",
          registered: "2",
        })
        expect(summary).toMatchObject({ ok: 1, unknown_definition: 1, exit: 2 })
      }).pipe(Backend.asFreshTenant),
    )

    it.live("an open run whose recorded prefix matches is ok-open, exit 0", () =>
      Effect.gen(function* () {
        const sleeper = definition("none", "gate.sleeper", true)
        const { lines } = yield* record(backend, [sleeper], 1)
        const { verdicts, summary } = yield* gate(lines, [sleeper])
        expect(verdictsOf(verdicts)).toEqual(["ok-open"])
        expect(summary).toMatchObject({ ok_open: 1, exit: 0 })
        // A change past the recorded prefix (the effect after the timer) is still to be lived: ok-open.
        const later = yield* gate(lines, [definition("args", "gate.sleeper", true)])
        expect(verdictsOf(later.verdicts)).toEqual(["ok-open"])
        // A change inside it is caught.
        const inside = yield* gate(lines, [definition("first-args", "gate.sleeper", true)])
        expect(verdictsOf(inside.verdicts)).toEqual(["nondeterministic"])
        expect(inside.summary.exit).toBe(2)
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a finished run whose code now asks for more is overrun, exit 2", () =>
      Effect.gen(function* () {
        const { lines } = yield* record(backend, [definition("none")], 1)
        const { verdicts, summary } = yield* gate(lines, [definition("extra-step")])
        expect(verdictsOf(verdicts)).toEqual(["overrun"])
        expect(summary.exit).toBe(2)
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a damaged record is unreadable by its line, the other runs are checked, exit 3", () =>
      Effect.gen(function* () {
        const { lines, runs } = yield* record(backend, [definition("none")], 3)
        // The second run's third record, its body changed to one that still decodes (another
        // phase): only its chain can tell.
        const target = lines.findIndex((l) => l.includes(`"run":"${runs[1]}"`) && l.includes('"seq":3'))
        const line = lines[target] as string
        const parsed = JSON.parse(line) as { raw: string }
        const body = Buffer.from(parsed.raw, "base64").toString("utf8")
        expect(body).toContain('"phase":"forward"')
        const changed = Buffer.from(body.replace('"phase":"forward"', '"phase":"compensating"')).toString("base64")
        const damaged = [...lines]
        damaged[target] = line.replace(parsed.raw, changed)
        const { verdicts, summary } = yield* gate(damaged, [definition("none")])
        expect(verdicts).toContainEqual(
          expect.objectContaining({
            verdict: "unreadable",
            run: runs[1],
            line: target + 1,
            detail: expect.stringContaining("hash"),
          }),
        )
        expect(verdicts.filter((v) => v.verdict === "ok").map((v) => v.run)).toEqual([runs[0], runs[2]])
        expect(summary).toMatchObject({ ok: 2, unreadable: 1, exit: 3 })
      }).pipe(Backend.asFreshTenant),
    )

    it.live("a truncated export is incomplete, exit 3, with every run it holds still checked", () =>
      Effect.gen(function* () {
        const { lines } = yield* record(backend, [definition("none")], 2)
        const truncated = lines.filter((l) => !l.includes(Format.END))
        const { summary } = yield* gate(truncated, [definition("none")])
        expect(summary).toMatchObject({ ok: 2, incomplete: "no trailer: the export is truncated", exit: 3 })
      }).pipe(Backend.asFreshTenant),
    )

    if (backend.keyRing !== undefined) {
      it.live("sealed payloads: unreadable without the key ring, ok through it", () =>
        Effect.gen(function* () {
          const { lines } = yield* record(backend, [definition("none")], 2)
          const { keyRing: _, ...unkeyed } = backend
          const closed = yield* gateOn(unkeyed, lines, [definition("none")])
          expect(verdictsOf(closed.verdicts)).toEqual(["unreadable", "unreadable"])
          expect(closed.verdicts[0]).toMatchObject({ detail: expect.stringContaining("payloads are sealed") })
          expect(closed.summary.exit).toBe(3)
          const opened = yield* gate(lines, [definition("none")])
          expect(verdictsOf(opened.verdicts)).toEqual(["ok", "ok"])
        }).pipe(Backend.asFreshTenant),
      )
    }

    it.live("a run that waited on a task due at its obligation replays from its own journal, no case store", () =>
      Effect.gen(function* () {
        const def = Support.asking("gate", new Support.Counter(), Option.some(Deadline.minutes(30)))
        const order = `o-${Math.random()}`
        const lines = yield* Effect.gen(function* () {
          const rt = yield* Runtime.Runtime
          const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), "order", [
            CorrelationKey.make("order", order),
          ])
          expect(first.status._tag).toBe("Suspended")
          const [task] = yield* Effect.flatMap(TaskStore, (t) => t.forCase(Option.getOrThrow(first.case)))
          const decision = new Decision({ approved: true, actor: "alice", reason: "ok", amendment: null })
          yield* rt.decideTask(task?.id as never, decision, ["reviewer"])
          yield* rt.idle
          expect(yield* Support.concludedAs(first.run, "succeeded")).toBe(true)
          return Chunk.toReadonlyArray(yield* Stream.runCollect(Export.lines()))
        }).pipe(Effect.provide(Support.runtime(backend, [def])))
        const { verdicts, summary } = yield* gate(lines, [def])
        expect(verdictsOf(verdicts)).toEqual(["ok"])
        expect(summary.exit).toBe(0)
      }).pipe(Backend.asFreshTenant),
    )

    it.live("filters: by run, by definition; a check that matches no run exits 1", () =>
      Effect.gen(function* () {
        const one = definition("none")
        const two = definition("none", "gate.second")
        const { lines } = yield* record(backend, [one, two], 4)
        const all = yield* gate(lines, [one, two])
        const runs = all.verdicts.map((v) => v.run)
        const ofSecond = all.verdicts.filter((v) => v.verdict === "ok" && v.definition === "gate.second")
        expect(ofSecond).toHaveLength(2)
        const byRun = yield* gate(lines, [one, two], { runs: new Set([runs[2] as string]) })
        expect(byRun.verdicts.map((v) => v.run)).toEqual([runs[2]])
        expect(byRun.summary).toMatchObject({ checked: 1, skipped: 3, exit: 0 })
        const byDefinition = yield* gate(lines, [one, two], { definition: "gate.second" })
        expect(byDefinition.verdicts.map((v) => v.run)).toEqual(ofSecond.map((v) => v.run))
        expect(byDefinition.summary).toMatchObject({ checked: 2, skipped: 2 })
        const since = yield* gate(lines, [one, two], { since: Math.floor(Date.now() / 1000) + 3600 })
        expect(since.summary).toMatchObject({ checked: 0, skipped: 4, exit: 1 })
      }).pipe(Backend.asFreshTenant),
    )
  })
