/**
 * The replay gate holds one run at a time (§7.13): an export of 180,400 records (16,400 runs,
 * about 100 MB of lines, more than the heap it runs in) replays in a process whose old generation
 * is capped at 64 MB, and its live heap, read after full collections every 1,000 runs, grows by
 * less than 4 MB from the first reading to the largest. Gathering the records of every run, or
 * keeping what each replay built, would grow it by the size of the export.
 *
 * The young generation is set to 8 MB, as in `VerifyMemory.test.ts`: Node sizes it from the old
 * generation's cap, and at the size it picks for 64 MB the collections alone take minutes.
 */
import { spawn } from "node:child_process"
import { describe, it } from "vitest"
import { assert } from "../support/Assert.js"

const RUNS = 16_400
const OLD_SPACE_MB = 64
const GROWTH_MB = 4

const replayCapped = () => {
  const child = spawn(process.execPath, [
    `--max-old-space-size=${OLD_SPACE_MB}`,
    "--max-semi-space-size=8",
    "--expose-gc",
    "--import",
    "tsx",
    "test/runtime/ReplayMany.ts",
    String(RUNS),
  ])
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString("utf8")
  })
  child.stderr.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-20_000)
  })
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stdout, stderr })),
  )
}

describe("the replay gate's memory", () => {
  it(`replays ${RUNS} runs with the old generation capped at ${OLD_SPACE_MB} MB, its live heap flat`, {
    timeout: 600_000,
  }, async () => {
    const done = await replayCapped()
    assert.strictEqual(done.code, 0, done.stderr.slice(-2_000))
    const found = JSON.parse(done.stdout) as {
      summary: { checked: number; ok: number; exit: number }
      records: number
      bytes: number
      firstLiveMb: number
      maxLiveMb: number
    }
    assert.strictEqual(found.summary.checked, RUNS)
    assert.strictEqual(found.summary.ok, RUNS)
    assert.strictEqual(found.summary.exit, 0)
    assert.isTrue(found.records >= 180_000, `${found.records} records`)
    assert.isTrue(found.bytes > OLD_SPACE_MB * (1 << 20), `the export is ${found.bytes} bytes`)
    assert.isTrue(
      found.maxLiveMb - found.firstLiveMb < GROWTH_MB,
      `the live heap grew from ${found.firstLiveMb.toFixed(1)} MB to ${found.maxLiveMb.toFixed(1)} MB`,
    )
  })
})
