/**
 * The peer block states issue 45's run-cost floors against the quiet rounds' medians, or every
 * round's when none was quiet, so the file says which floor holds without anyone reading the table.
 */
import { describe, it } from "vitest"
import type * as Peers from "../../bench/Peers.js"
import * as Report from "../../bench/Report.js"
import { assert } from "../support/Assert.js"

const env: Report.Environment = {
  date: "2026-12-07 06:00",
  mode: "quick",
  machine: "test",
  versions: "test",
  command: "npm run bench -- --peers",
  seconds: 1,
  load: "0 / 0 / 0",
  speed: "100 ms",
}

const cell = (side: Peers.Side, perSec: number, cpuPerOp: number, commits: number): Peers.Cell => ({
  side,
  pool: 16,
  commits,
  figures: { ops: 100, seconds: 1, perSec, p50: 1, p99: 2, cpuPerOp },
})

/** One round per entry of `c16`: its ratio at c16, and whether it was loaded. */
const results = (c16: ReadonlyArray<{ ratio: number; loaded: boolean }>, cpu: number): Peers.Results => ({
  rounds: c16.map((r, i) => ({ round: i + 1, speedMs: 100, load: "0 / 0 / 0", load1: 0, loaded: r.loaded })),
  rows: c16.flatMap((r, i) => [
    {
      round: i + 1,
      concurrency: 1,
      agentplane: cell("agentplane", 140, 900, 3),
      dbos: cell("dbos", 100, 2000, 10),
      ratio: 1.4,
    },
    {
      round: i + 1,
      concurrency: 16,
      agentplane: cell("agentplane", 100 * r.ratio, cpu, 0.6),
      dbos: cell("dbos", 100, 1600, 10),
      ratio: r.ratio,
    },
  ]),
})

const floors = (text: string) => text.split("\n").slice(-1)[0] ?? ""

describe("the peer block's floors", () => {
  it("marks each floor met or not from the quiet rounds' medians, leaving the loaded rounds out", () => {
    const rounds = [
      { ratio: 2.6, loaded: false },
      { ratio: 1.0, loaded: true },
      { ratio: 1.0, loaded: true },
    ]
    const line = floors(Report.renderPeers(env, results(rounds, 950)))
    assert.isTrue(line.includes("ratio at c16 2.60 (≥ 2.5: met)"), line)
    assert.isTrue(line.includes("ratio at c1 1.40 (≥ 1.3: met)"), line)
    assert.isTrue(line.includes("client CPU at c16 950 µs/run (≤ 1000: met)"), line)
    assert.isTrue(line.includes("at c16 0.60 (< 1: met)"), line)
  })

  it("says not met, and that no round was quiet, when every round was loaded", () => {
    const text = Report.renderPeers(
      env,
      results(
        [
          { ratio: 1.5, loaded: true },
          { ratio: 1.5, loaded: true },
        ],
        1800,
      ),
    )
    assert.isTrue(text.includes("medians of every round (none was quiet)"), text)
    const line = floors(text)
    assert.isTrue(line.includes("ratio at c16 1.50 (≥ 2.5: **not met**)"), line)
    assert.isTrue(line.includes("client CPU at c16 1800 µs/run (≤ 1000: **not met**)"), line)
  })
})
