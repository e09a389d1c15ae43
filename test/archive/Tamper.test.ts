/**
 * A damaged export is caught by `verify`, naming the line and, for a record, its run and seq;
 * restore refuses it before writing anything. Each damage is planted in a real export.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Option, Stream } from "effect"
import * as Restore from "../../src/archive/Restore.js"
import * as Verify from "../../src/archive/Verify.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed } from "./Support.js"

type Lines = ReadonlyArray<string>

const field = (line: string) => JSON.parse(line) as { kind: string; run?: string; seq?: number; raw?: string }

/** The index of the first line matching `p`. */
const find = (lines: Lines, p: (l: ReturnType<typeof field>) => boolean) => lines.findIndex((l) => p(field(l)))

const replace = (lines: Lines, i: number, text: string) => lines.map((l, j) => (j === i ? text : l))

/** A record's raw with one byte flipped, re-encoded as valid base64: only the chain can tell. */
const flipRaw = (line: string, at: number) => {
  const value = JSON.parse(line) as { raw: string }
  const raw = Buffer.from(value.raw, "base64")
  raw[at % raw.length] = (raw[at % raw.length] ?? 0) ^ 0x01
  return JSON.stringify({ ...value, raw: raw.toString("base64") })
}

interface Damage {
  readonly name: string
  readonly plant: (lines: Lines) => Lines
  /** What `verify` must say: the 1-based line, and the record when the damage is in one. */
  readonly expect: (lines: Lines) => { line: number; run?: string; seq?: number; detail: RegExp }
}

const nthRecord = (lines: Lines, seq: number, runIndex = 2) => {
  const runs = [...new Set(lines.filter((l) => field(l).kind.endsWith("record")).map((l) => field(l).run))]
  const run = runs[runIndex]
  return find(lines, (l) => l.run === run && l.seq === seq)
}

const damages: ReadonlyArray<Damage> = [
  {
    name: "a flipped byte in a record's raw",
    plant: (lines) => replace(lines, nthRecord(lines, 300), flipRaw(lines[nthRecord(lines, 300)] ?? "", 40)),
    expect: (lines) => ({
      line: nthRecord(lines, 300) + 1,
      run: field(lines[nthRecord(lines, 300)] ?? "").run ?? "",
      seq: 300,
      detail: /the bytes were changed/,
    }),
  },
  {
    name: "a flipped character in the base64 text",
    plant: (lines) => {
      const i = nthRecord(lines, 2, 0)
      const line = lines[i] ?? ""
      const at = line.indexOf('"raw":"') + 12
      return replace(lines, i, line.slice(0, at) + (line[at] === "A" ? "B" : "A") + line.slice(at + 1))
    },
    expect: (lines) => ({
      line: nthRecord(lines, 2, 0) + 1,
      run: field(lines[nthRecord(lines, 2, 0)] ?? "").run ?? "",
      seq: 2,
      detail: /./,
    }),
  },
  {
    // A lenient decoder skips the stray character and the chain still verifies: only strict base64 sees it.
    name: "a character base64 does not have inserted into raw",
    plant: (lines) => {
      const i = nthRecord(lines, 3, 0)
      const line = lines[i] ?? ""
      const at = line.indexOf('"raw":"') + 10
      return replace(lines, i, `${line.slice(0, at)}*${line.slice(at)}`)
    },
    expect: (lines) => ({ line: nthRecord(lines, 3, 0) + 1, detail: /canonical base64/ }),
  },
  {
    name: "a dropped record line inside a run",
    plant: (lines) => lines.filter((_, i) => i !== nthRecord(lines, 10)),
    expect: (lines) => ({
      line: nthRecord(lines, 10) + 1,
      run: field(lines[nthRecord(lines, 10)] ?? "").run ?? "",
      seq: 11,
      detail: /seq 10 is missing/,
    }),
  },
  {
    name: "a dropped last record of a run",
    plant: (lines) => lines.filter((_, i) => i !== nthRecord(lines, 600)),
    expect: (lines) => ({ line: lines.length - 1, detail: /counts 607 records, the export holds 606/ }),
  },
  {
    name: "a dropped case line",
    plant: (lines) => lines.filter((_, i) => i !== find(lines, (l) => l.kind.endsWith("case"))),
    expect: (lines) => ({ line: lines.length - 1, detail: /counts 2 cases, the export holds 1/ }),
  },
  {
    name: "two record lines swapped",
    plant: (lines) => {
      const i = nthRecord(lines, 5)
      return lines.map((l, j) => (j === i ? (lines[i + 1] ?? "") : j === i + 1 ? (lines[i] ?? "") : l))
    },
    expect: (lines) => ({
      line: nthRecord(lines, 5) + 1,
      run: field(lines[nthRecord(lines, 5)] ?? "").run ?? "",
      seq: 6,
      detail: /seq 5 is missing/,
    }),
  },
  {
    name: "two runs swapped",
    plant: (lines) => {
      const a = nthRecord(lines, 1, 0)
      const b = nthRecord(lines, 1, 1)
      const c = nthRecord(lines, 1, 2)
      return [...lines.slice(0, a), ...lines.slice(b, c), ...lines.slice(a, b), ...lines.slice(c)]
    },
    expect: (lines) => {
      const a = nthRecord(lines, 1, 0)
      const b = nthRecord(lines, 1, 1)
      const c = nthRecord(lines, 1, 2)
      return {
        line: a + (c - b) + 1,
        run: field(lines[a] ?? "").run ?? "",
        seq: 1,
        detail: /out of order/,
      }
    },
  },
  {
    name: "two case lines swapped",
    plant: (lines) => {
      const i = find(lines, (l) => l.kind.endsWith("case"))
      return lines.map((l, j) => (j === i ? (lines[i + 1] ?? "") : j === i + 1 ? (lines[i] ?? "") : l))
    },
    expect: (lines) => ({ line: find(lines, (l) => l.kind.endsWith("case")) + 2, detail: /cases are out of order/ }),
  },
  {
    name: "a wrong trailer count",
    plant: (lines) => replace(lines, lines.length - 1, (lines[lines.length - 1] ?? "").replace('"runs":4', '"runs":5')),
    expect: (lines) => ({ line: lines.length, detail: /counts 5 runs, the export holds 4/ }),
  },
  {
    name: "a missing trailer",
    plant: (lines) => lines.slice(0, -1),
    expect: (lines) => ({ line: lines.length - 1, detail: /no trailer/ }),
  },
  {
    name: "a record moved after the cases",
    plant: (lines) => {
      const i = nthRecord(lines, 600)
      return [...lines.slice(0, i), ...lines.slice(i + 1, -1), lines[i] ?? "", lines[lines.length - 1] ?? ""]
    },
    expect: (lines) => ({
      line: lines.length - 1,
      run: field(lines[nthRecord(lines, 600)] ?? "").run ?? "",
      seq: 600,
      detail: /after the cases/,
    }),
  },
]

const backend = Backend.memory()

describe("tampering", () => {
  layer(backend.layer, { excludeTestServices: true })((it) => {
    for (const damage of damages) {
      it.effect(`${damage.name} is named by verify and refused by restore, which writes nothing`, () =>
        Effect.gen(function* () {
          const source = Backend.freshTenant()
          yield* seed().pipe(as(source))
          const lines = yield* exportLines.pipe(as(source))
          assert.isTrue(Either.isRight(yield* Effect.either(Verify.lines(Stream.fromIterable(lines)))))
          const damaged = damage.plant(lines)
          const flipped = yield* Effect.flip(Verify.lines(Stream.fromIterable(damaged)))
          const want = damage.expect(lines)
          assert.strictEqual(flipped._tag, "ExportDamaged")
          const found = flipped as Verify.ExportDamaged
          assert.deepStrictEqual(
            { line: found.line, run: found.run, seq: found.seq },
            { line: want.line, run: want.run, seq: want.seq },
          )
          assert.isTrue(want.detail.test(found.detail), `${found.detail} does not match ${want.detail}`)

          const target = Backend.freshTenant()
          const refused = yield* Effect.flip(Restore.restore(() => Stream.fromIterable(damaged)).pipe(as(target)))
          assert.strictEqual(refused._tag, "ExportDamaged")
          const journal = yield* JournalStore
          const cases = yield* CaseStore
          assert.deepStrictEqual(yield* journal.runs(Option.none(), 10).pipe(as(target)), [])
          assert.deepStrictEqual(yield* cases.cases(Option.none(), 10).pipe(as(target)), [])
        }),
      )
    }
  })
})
