/**
 * `npm run bench -- --baseline`: the keyed two-effect run on SQLite at concurrency 16, this
 * checkout against the code as it stood when issue 32 was filed (`BASE`), interleaved round by
 * round in the same bench. Issue 32 asks for 2× that code's runs/s; a figure from an older run
 * would compare two machines, since this VM's speed drifts by up to 1.6× within an hour.
 *
 * **The baseline** is a `git worktree` of `BASE` in a temporary folder, sharing this checkout's
 * `node_modules` (the same effect, @effect/sql and better-sqlite3 releases). Its bench module keeps
 * `runtimeOn` and `TwoEffects` to itself; the worktree gets the two `export`s added and nothing
 * else, so what runs is that commit's runtime, stores and run definition.
 *
 * **A cell** is `bench/baseline/Cell.ts` run in a process of its own (copied into the worktree for
 * the baseline side), on a fresh SQLite file, so neither side inherits the other's JIT state, heap
 * or file: it warms with 48 runs, then times up to 2,000 runs or 3 s (quick: 200 or 0.5 s), and
 * reports runs/s, p50/p99 and its own client CPU per run. Sides alternate which goes first.
 */
import { execFileSync, spawn } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { type Figures, median } from "./Harness.js"
import { load, speedCheck } from "./Machine.js"

/** The commit issue 32 was filed on: the last commit before that wave's work began. */
export const BASE = "8bad9e177f565a74a53dd484da75bf441a437dc3"
export const CONCURRENCY = 16
/** Issue 32's bar: this checkout at least twice the baseline's runs/s. */
export const TARGET = 2

export type Side = "current" | "baseline"

export interface Round {
  readonly round: number
  readonly speedMs: number
  readonly load: string
  readonly load1: number
  readonly current: Figures
  readonly baseline: Figures
  /** Current runs/s over baseline runs/s, within the round. */
  readonly ratio: number
}

export interface Results {
  readonly base: string
  readonly rounds: ReadonlyArray<Round>
  /** Median of the per-round ratios. */
  readonly ratio: number
}

export const run = async (options: {
  readonly quick: boolean
  readonly rounds: number
  readonly log: (line: string) => void
}): Promise<Results> => {
  const { quick, log } = options
  const here = join(import.meta.dirname, "..")
  const worktree = mkdtempSync(join(tmpdir(), "agentplane-baseline-"))
  const files = mkdtempSync(join(tmpdir(), "agentplane-baseline-db-"))
  try {
    prepare(here, worktree)
    const runs = quick ? 200 : 2000
    const cap = quick ? 0.5 : 3
    const rounds: Array<Round> = []
    for (let round = 1; round <= options.rounds; round++) {
      const speedMs = speedCheck()
      const order: ReadonlyArray<Side> = round % 2 === 1 ? ["current", "baseline"] : ["baseline", "current"]
      const figures: Partial<Record<Side, Figures>> = {}
      for (const side of order) {
        const file = join(files, `${side}-${round}.db`)
        figures[side] = await cell(side === "current" ? here : worktree, file, runs, cap)
        for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true })
      }
      const { current, baseline } = figures
      if (current === undefined || baseline === undefined) throw new Error("a baseline cell did not run")
      const row = {
        round,
        speedMs,
        load: load(),
        load1: loadavg()[0] ?? 0,
        current,
        baseline,
        ratio: current.perSec / baseline.perSec,
      }
      log(
        `baseline round ${round}: current ${current.perSec.toFixed(0)} runs/s (${current.cpuPerOp.toFixed(0)} µs CPU/run), ` +
          `baseline ${baseline.perSec.toFixed(0)} runs/s (${baseline.cpuPerOp.toFixed(0)} µs CPU/run), ratio ${row.ratio.toFixed(2)}`,
      )
      rounds.push(row)
    }
    return { base: BASE, rounds, ratio: median(rounds.map((r) => r.ratio)) }
  } finally {
    rmSync(files, { recursive: true, force: true })
    try {
      execFileSync("git", ["-C", here, "worktree", "remove", "--force", worktree], { stdio: "ignore" })
    } catch {
      // A worktree git no longer knows (removed by hand, say): the folder goes all the same.
    }
    rmSync(worktree, { recursive: true, force: true })
  }
}

// internal

/** The worktree of `BASE`, with this checkout's `node_modules`, the two exports and the cell. */
const prepare = (here: string, worktree: string): void => {
  execFileSync("git", ["-C", here, "worktree", "add", "--detach", "--force", worktree, BASE], { stdio: "ignore" })
  symlinkSync(join(here, "node_modules"), join(worktree, "node_modules"), "dir")
  const module = join(worktree, "bench", "Runtime.ts")
  const text = readFileSync(module, "utf8")
  const exported = text
    .replace(/^const TwoEffects = /m, "export const TwoEffects = ")
    .replace(/^const runtimeOn = /m, "export const runtimeOn = ")
  if (!exported.includes("export const TwoEffects = ") || !exported.includes("export const runtimeOn = ")) {
    throw new Error(`the baseline's bench/Runtime.ts no longer defines TwoEffects and runtimeOn as ${BASE} did`)
  }
  writeFileSync(module, exported)
  cpSync(join(here, "bench", "baseline"), join(worktree, "bench", "baseline"), { recursive: true })
}

/** One cell in a child process under `dir`'s code; its last output line is the `Figures`. */
const cell = (dir: string, file: string, runs: number, cap: number): Promise<Figures> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join("bench", "baseline", "Cell.ts"), file, String(CONCURRENCY), String(runs), String(cap)],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"] },
    )
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8")
    })
    child.on("error", reject)
    child.on("close", (code) => {
      const last = out.trim().split("\n").at(-1)
      if (code !== 0 || last === undefined || last === "") {
        reject(new Error(`baseline cell in ${dir} exited ${code}: ${err.trim().split("\n").slice(-5).join(" | ")}`))
        return
      }
      resolve(JSON.parse(last) as Figures)
    })
  })
