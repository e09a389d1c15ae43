/**
 * The log check with its leaves spilled to temporary files (`leavesInMemory` of 3 and 1) finds
 * what it finds with them in memory, on a synthetic export of 400 logged runs tampered with:
 * runs missing (more than the report keeps, named in log order), runs the trailer lists as
 * unreadable, a leaf altered, a leaf removed. A run with two leaves is damage at the second
 * leaf's line, before damage on any later line. The temporary files are gone however
 * verification ends: verified, not matching, damaged, or the source failing.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Either, Stream } from "effect"
import { afterAll, describe, it } from "vitest"
import * as LogCheck from "../../src/archive/LogCheck.js"
import * as Verify from "../../src/archive/Verify.js"
import { assert } from "../support/Assert.js"
import * as Synthetic from "./Synthetic.js"

const RUNS = 400
const synthetic = Synthetic.make(RUNS)
const lines: ReadonlyArray<string> = [...synthetic.lines()]
const LEAF_LINE = 2 // the leaf at position p is on line p + 2

type Line = Record<string, unknown> & { kind: string; run?: string; index?: number }
const parsed = (line: string) => JSON.parse(line) as Line
const isRecord = (l: Line) => l.kind.endsWith(".record")

const root = fs.mkdtempSync(path.join(os.tmpdir(), "agentplane-logspill-test-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

/** What a verification came to, as plain data. */
const outcome = (result: Either.Either<Verify.Verified, Verify.ExportDamaged | LogCheck.CheckpointMismatch>) =>
  Either.match(result, {
    onRight: (v) => ({ verified: v }),
    onLeft: (e) =>
      e._tag === "ExportDamaged"
        ? { damaged: { line: e.line, run: e.run, seq: e.seq, detail: e.detail } }
        : { mismatch: { findings: e.findings, more: e.more } },
  })

const run = (text: ReadonlyArray<string>, options: LogCheck.Options) =>
  Effect.runPromise(Effect.either(Verify.lines(Stream.fromIterable(text), undefined, {}, options))).then(outcome)

/** Verified with the leaves in memory, and spilled 3 and 1 at a time: the same outcome, returned. */
const verified = async (text: ReadonlyArray<string>) => {
  const inMemory = await run(text, {})
  for (const leavesInMemory of [3, 1]) {
    const directory = fs.mkdtempSync(path.join(root, "run-"))
    assert.deepStrictEqual(await run(text, { leavesInMemory, directory }), inMemory, `${leavesInMemory} at a time`)
    assert.deepStrictEqual(fs.readdirSync(directory), [])
  }
  return inMemory
}

/** The export with the records of the runs `gone` (by place in id order) taken out, the trailer counting what is left. */
const withoutRecords = (text: ReadonlyArray<string>, gone: ReadonlySet<string>, unreadable: ReadonlyArray<string>) => {
  const kept = text.slice(0, -1).filter((l) => {
    const p = parsed(l)
    return !(isRecord(p) && gone.has(p.run as string))
  })
  const records = kept.filter((l) => isRecord(parsed(l))).length
  const end = parsed(text[text.length - 1] as string)
  return [
    ...kept,
    JSON.stringify({
      ...end,
      runs: records,
      records,
      unreadable: unreadable.map((run) => ({ run, seq: 1, detail: "could not be read" })),
    }),
  ]
}

/** The export with the leaf at position `p` changed, or removed when `change` returns undefined. */
const leafChanged = (text: ReadonlyArray<string>, p: number, change: (leaf: Line) => Line | undefined) =>
  text.flatMap((l, i) => {
    if (i !== p + LEAF_LINE - 1) return [l]
    const changed = change(parsed(l))
    return changed === undefined ? [] : [JSON.stringify(changed)]
  })

const runAt = (p: number) => parsed(lines[p + LEAF_LINE - 1] as string).run as string

describe("the log check with its leaves spilled", () => {
  it("verifies the untouched export the same", async () => {
    const result = await verified(lines)
    assert.isTrue("verified" in result)
  })

  it("names the same runs missing, in log order past the report's limit, and skips the ones listed unreadable", async () => {
    const runs = synthetic.runs
    const gone = new Set(runs.filter((_, r) => r % 2 === 0))
    const unreadable = runs.filter((_, r) => r % 6 === 0)
    const altered = 1
    const text = leafChanged(withoutRecords(lines, gone, unreadable), synthetic.positions[altered] as number, (l) => ({
      ...l,
      records: 2,
    }))
    const missing = runs
      .map((run, r) => ({ run, r, index: synthetic.positions[r] as number }))
      .filter(({ r }) => r % 2 === 0 && r % 6 !== 0)
      .sort((a, b) => a.index - b.index)
      .map(({ run, index }) => ["missing", run, index])
    const expected: Array<Array<unknown>> = [
      ["root", null, null],
      ["altered", runs[altered], synthetic.positions[altered]],
      ...missing,
    ]
    const result = await verified(text)
    assert.isTrue("mismatch" in result)
    if (!("mismatch" in result)) return
    assert.deepStrictEqual(
      result.mismatch.findings.map((f) => [f.finding, f.run ?? null, f.index ?? null]),
      expected.slice(0, LogCheck.MAX_FINDINGS),
    )
    assert.strictEqual(result.mismatch.more, expected.length - LogCheck.MAX_FINDINGS)
  })

  it("names the gap of a removed leaf the same", async () => {
    const result = await verified(leafChanged(lines, 17, () => undefined))
    assert.isTrue("mismatch" in result)
    if ("mismatch" in result)
      assert.deepStrictEqual(
        result.mismatch.findings.map((f) => [f.finding, f.index ?? null]),
        [
          ["gap", 17],
          ["root", null],
        ],
      )
  })

  it("reports a run with two leaves at its second leaf's line, the earliest such line, before later damage", async () => {
    // Positions 3 and 4 name one run (its second leaf on line 6), positions 2 and 5 another (line 7).
    const twice = leafChanged(
      leafChanged(lines, 4, (l) => ({ ...l, run: runAt(3) })),
      5,
      (l) => ({ ...l, run: runAt(2) }),
    )
    const damage = { damaged: { line: 4 + LEAF_LINE, detail: `run ${runAt(3)} has a second leaf, at 4` } }
    const shown = (r: Awaited<ReturnType<typeof verified>>) =>
      "damaged" in r ? { damaged: { line: r.damaged.line, detail: r.damaged.detail } } : r
    assert.deepStrictEqual(shown(await verified(twice)), damage)
    // A later leaf line that is not JSON, a later leaf out of order, the file cut off among the leaves:
    const broken = twice.map((l, i) => (i === 10 + LEAF_LINE - 1 ? "{" : l))
    assert.deepStrictEqual(shown(await verified(broken)), damage)
    const outOfOrder = leafChanged(twice, 12, (l) => ({ ...l, index: 1 }))
    assert.deepStrictEqual(shown(await verified(outOfOrder)), damage)
    assert.deepStrictEqual(shown(await verified(twice.slice(0, 20))), damage)
    // Damage on an earlier line comes first.
    const earlier = twice.map((l, i) => (i === 1 + LEAF_LINE - 1 ? "{" : l))
    assert.deepStrictEqual(shown(await verified(earlier)), {
      damaged: { line: 1 + LEAF_LINE, detail: "not a JSON line" },
    })
  })

  it("removes its temporary files however verification ends", async () => {
    const firstRecord = lines.findIndex((l) => isRecord(parsed(l)))
    const ends: ReadonlyArray<[string, Stream.Stream<string, string>]> = [
      ["verified", Stream.fromIterable(lines)],
      ["not matching", Stream.fromIterable(withoutRecords(lines, new Set([synthetic.runs[0] as string]), []))],
      [
        "damaged",
        Stream.fromIterable(lines.map((l, i) => (i === firstRecord + 5 ? l.replace('"seq":1', '"seq":2') : l))),
      ],
      ["the source failing", Stream.concat(Stream.fromIterable(lines.slice(0, firstRecord + 5)), Stream.fail("gone"))],
    ]
    for (const [how, source] of ends) {
      const directory = fs.mkdtempSync(path.join(root, "ends-"))
      let during = -1
      const watched = source.pipe(
        Stream.tap((l) =>
          Effect.sync(() => {
            if (during < 0 && isRecord(parsed(l))) during = fs.readdirSync(directory).length
          }),
        ),
      )
      const result = await Effect.runPromise(
        Effect.either(Verify.lines(watched, undefined, {}, { leavesInMemory: 3, directory })),
      )
      assert.strictEqual(Either.isRight(result), how === "verified", how)
      assert.strictEqual(during, 1, `${how}: the leaves were spilled`)
      assert.deepStrictEqual(fs.readdirSync(directory), [], `${how}: the files are removed`)
    }
  })
})
