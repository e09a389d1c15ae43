/**
 * Verify holds a bounded number of leaves, whatever the number of logged runs: an export of
 * 200,000 logged runs (leaves in shuffled log order, one record each, its checkpoint signed over
 * them) verifies in a process whose old generation is capped at 64 MB, and its live heap, sampled
 * after full collections, stays under 48 MB. The same check holding every leaf until its run's
 * records arrive (`leavesInMemory: Infinity`) runs out of that heap and aborts: the cap is small
 * enough to tell the two apart.
 *
 * The young generation is set to 8 MB because Node sizes it from the old generation's cap, and
 * at the size it picks for 64 MB the collections alone take minutes.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, it } from "vitest"
import { assert } from "../support/Assert.js"
import * as Synthetic from "./Synthetic.js"

const RUNS = 200_000
const OLD_SPACE_MB = 64
const LIVE_MB = 48

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agentplane-verify-memory-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

/** The synthetic export streamed to a file, a block at a time. */
const written = (file: string) => {
  const fd = fs.openSync(file, "w")
  try {
    let text = ""
    for (const line of Synthetic.make(RUNS).lines()) {
      text += `${line}\n`
      if (text.length >= 1 << 16) {
        fs.writeSync(fd, text)
        text = ""
      }
    }
    fs.writeSync(fd, text)
  } finally {
    fs.closeSync(fd)
  }
}

/** `VerifyMany` on the file under the capped heap; `inMemory` overrides the leaves held in memory. */
const verifyCapped = (file: string, inMemory?: string) => {
  const child = spawn(process.execPath, [
    `--max-old-space-size=${OLD_SPACE_MB}`,
    "--max-semi-space-size=8",
    "--expose-gc",
    "--import",
    "tsx",
    "test/archive/VerifyMany.ts",
    file,
    ...(inMemory === undefined ? [] : [inMemory]),
  ])
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString("utf8")
  })
  child.stderr.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-20_000)
  })
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => child.once("exit", (code, signal) => resolve({ code, signal, stdout, stderr })),
  )
}

describe("verify's memory", () => {
  it(`verifies ${RUNS} logged runs with the old generation capped at ${OLD_SPACE_MB} MB, where holding every leaf runs out`, async () => {
    const file = path.join(dir, "export.jsonl")
    written(file)
    const bounded = await verifyCapped(file)
    assert.strictEqual(bounded.code, 0, bounded.stderr.slice(-2_000))
    const found = JSON.parse(bounded.stdout) as {
      lines: number
      runs: number
      records: number
      size: number
      unlogged: number
      peak: number
    }
    assert.deepStrictEqual(
      { lines: found.lines, runs: found.runs, records: found.records, size: found.size, unlogged: found.unlogged },
      { lines: 2 * RUNS + 2, runs: RUNS, records: RUNS, size: RUNS, unlogged: 0 },
    )
    assert.isTrue(found.peak < LIVE_MB * 2 ** 20, `live heap peaked at ${(found.peak / 2 ** 20).toFixed(1)} MB`)

    const unbounded = await verifyCapped(file, "Infinity")
    assert.notStrictEqual(unbounded.code, 0)
    assert.match(unbounded.stderr, /heap out of memory/)
  }, 240_000)
})
