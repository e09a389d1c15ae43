/**
 * `agentplane verify` as a real process: exit 0 with the counts for a sound export, 2 naming the
 * line, run and seq of a tampered byte, 3 for a sound export whose trailer lists unreadable runs,
 * 1 when there is nothing to check.
 */
import { writeFileSync } from "node:fs"
import { Effect } from "effect"
import { afterAll, describe, it } from "vitest"
import * as MemoryBackend from "../../src/layers/memory/MemoryBackend.js"
import * as Cli from "../archive/Cli.js"
import { as, exportLines, seed } from "../archive/Support.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"

afterAll(Cli.cleanUp)

const file = (lines: ReadonlyArray<string>) => {
  const path = Cli.scratchFile("verify.jsonl")
  writeFileSync(path, `${lines.join("\n")}\n`)
  return path
}

describe("verify", () => {
  it("exits 0, 2, 3 or 1 as the export is sound, damaged, incomplete or missing", { timeout: 180_000 }, async () => {
    const lines = await Effect.runPromise(
      Effect.zipRight(seed(20), exportLines).pipe(as(Backend.freshTenant()), Effect.provide(MemoryBackend.layer)),
    )
    const at = lines.findIndex((l) => l.includes('"seq":7}'))
    const record = JSON.parse(lines[at] ?? "") as { run: string; raw: string }
    const raw = Buffer.from(record.raw, "base64")
    raw[3] = (raw[3] ?? 0) ^ 0x20
    const tampered = lines.map((l, i) => (i === at ? JSON.stringify({ ...record, raw: raw.toString("base64") }) : l))
    const incomplete = lines.map((l, i) =>
      i === lines.length - 1
        ? l.replace('"unreadable":[]', `"unreadable":[{"detail":"lost","run":"${record.run}","seq":30}]`)
        : l,
    )
    const [sound, damaged, partial, missing] = await Promise.all([
      Cli.cli(["verify", "--in", file(lines)]),
      Cli.cli(["verify"], { AGENTPLANE_IN: file(tampered) }),
      Cli.cli(["verify", "--in", file(incomplete), "--quiet"]),
      Cli.cli(["verify", "--in", Cli.scratchFile("absent.jsonl")]),
    ])
    assert.strictEqual(sound.code, 0, sound.stderr)
    assert.deepStrictEqual(JSON.parse(sound.stdout), {
      verified: true,
      tenant: (JSON.parse(lines[0] ?? "") as { tenant: string }).tenant,
      runs: 4,
      records: 27,
      cases: 2,
      unreadable: [],
      // A tenant never integrated: its export carries no checkpoint to hold it to.
      log: null,
    })
    assert.strictEqual(sound.stderr, "")
    assert.strictEqual(damaged.code, 2, damaged.stderr)
    const report = JSON.parse(damaged.stdout) as { verified: boolean; line: number; run: string; seq: number }
    assert.deepStrictEqual(
      { verified: report.verified, line: report.line, run: report.run, seq: report.seq },
      { verified: false, line: at + 1, run: record.run, seq: 7 },
    )
    assert.isTrue(damaged.stderr.includes(`line ${at + 1} (run ${record.run} seq 7)`), damaged.stderr)
    assert.strictEqual(partial.code, 3, partial.stderr)
    assert.strictEqual(missing.code, 1, missing.stderr)
    assert.isTrue(missing.stderr.startsWith("agentplane: "), missing.stderr)
  })
})
