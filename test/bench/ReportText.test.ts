/**
 * The generated blocks state what the bench checks now: the peer floors and the SQLite baseline
 * name the constants that enforce them, and no block carries the number of an issue that asked for
 * a floor (BENCHMARKS.md states the present; its history is in git).
 */
import { describe, it } from "vitest"
import * as Baseline from "../../bench/Baseline.js"
import type { Figures } from "../../bench/Harness.js"
import type * as Peers from "../../bench/Peers.js"
import * as Report from "../../bench/Report.js"
import { assert } from "../support/Assert.js"

const env: Report.Environment = {
  date: "2026-12-07 10:00",
  mode: "quick",
  machine: "test",
  versions: "test",
  command: "npm run bench -- --peers --baseline",
  seconds: 1,
  load: "0 / 0 / 0",
  speed: "100 ms",
}

const figures = (perSec: number, cpuPerOp: number): Figures => ({
  ops: 100,
  seconds: 1,
  perSec,
  p50: 1,
  p99: 2,
  cpuPerOp,
})

const cell = (side: Peers.Side, perSec: number): Peers.Cell => ({
  side,
  pool: 16,
  commits: side === "agentplane" ? 0.6 : 10,
  figures: figures(perSec, 1500),
})

const peers: Peers.Results = {
  rounds: [{ round: 1, speedMs: 100, load: "0 / 0 / 0", load1: 0, loaded: false }],
  rows: [1, 16].map((concurrency) => ({
    round: 1,
    concurrency,
    agentplane: cell("agentplane", 150),
    dbos: cell("dbos", 100),
    ratio: 1.5,
  })),
}

const baseline: Baseline.Results = {
  base: Baseline.BASE,
  rounds: [
    {
      round: 1,
      speedMs: 100,
      load: "0 / 0 / 0",
      load1: 0,
      current: figures(420, 3300),
      baseline: figures(410, 3400),
      ratio: 1.02,
    },
  ],
  ratio: 1.02,
}

const ISSUE = /\bissues? \d+/i

describe("the generated blocks' text", () => {
  it("names PEER_FLOORS for the peer floors and cites no issue", () => {
    const text = Report.renderPeers(env, peers)
    assert.isTrue(text.includes("Floors (`PEER_FLOORS` in bench/Report.ts)"), text)
    assert.isFalse(ISSUE.test(text), text)
  })

  it("names Baseline.BASE and Baseline.TARGET for the SQLite baseline and cites no issue", () => {
    const text = Report.renderBaseline(env, baseline)
    assert.isTrue(text.includes("`Baseline.BASE`"), text)
    assert.isTrue(text.includes("`Baseline.TARGET`"), text)
    assert.isFalse(ISSUE.test(text), text)
  })
})
