/**
 * The peer cell (`--peers`): agentplane's two-effect run with an admission key against DBOS
 * Transact doing the same work, on the same PostgreSQL, interleaved round by round.
 *
 * **The work.** agentplane: `rt.run(TwoEffects, Run.labeled({n}, "bench"), { admissionKey })`, a
 * unique key per run, one `runPromise` per run as the runtime rows call it, on a pool of the
 * cell's concurrency, in the bench database. DBOS (`bench/peers/Dbos.ts`): a workflow of two
 * `DBOS.runStep` calls, each returning n + 1, started under a unique workflow id and awaited, its
 * system tables in a throwaway database of its own, on a pool of the concurrency plus one (its
 * LISTEN/NOTIFY listener holds one connection of the same pool for as long as it is launched) but
 * at least DBOS's default of 10 (on a pool of 1 the listener left the work none to spare, and 200
 * sequential workflows took 77 s instead of 4).
 *
 * **A round** times, at concurrency 1 and then 16, both sides one after the other (agentplane
 * first in odd rounds, DBOS first in even ones, so neither always runs on the warmer or the
 * quieter machine), and gives the ratio agentplane/DBOS of runs/s within the round. Each side's
 * cell opens its runtime (DBOS: launches), warms with max(3c, 20) runs, then times up to 2,000
 * runs or 3 s (quick: 100 runs or 0.3 s) through `measure`: runs/s, p50/p99, and client CPU
 * (`process.cpuUsage()` over the timed runs, per run; one process drives both sides, and only
 * one side is open at a time).
 *
 * **Server commits per run**: `xact_commit` of the database the side writes, read settled from
 * the admin database before the cell opens and after it closes (closing flushes the backends'
 * counters), less an idle pass that opens and stays open as long as the cell's runs took, then
 * closes: start-up, shutdown and background polling (DBOS's queue and timeout sweeps) cancel out,
 * and what is left is divided by the runs the cell made (warm-up included).
 *
 * **Loaded rounds.** Each round reads the speed check and the load average first. A round is
 * marked loaded when its speed check took more than 1.25× the fastest of the run's rounds, or
 * its 1-minute load average was at or above the core count; medians are given over all rounds
 * and over the quiet ones.
 */
import { cpus, loadavg } from "node:os"
import { performance } from "node:perf_hooks"
import { Effect } from "effect"
import * as Run from "../src/domain/Run.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import * as Runtime from "../src/runtime/Runtime.js"
import type * as Databases from "./Databases.js"
import { type Figures, measure, median } from "./Harness.js"
import { load, speedCheck } from "./Machine.js"
import * as RuntimeBench from "./Runtime.js"

export type Side = "agentplane" | "dbos"

export interface Cell {
  readonly side: Side
  readonly figures: Figures
  /** Pool size the side ran on. */
  readonly pool: number
  /** Server-counted commits per run, idle pass subtracted. */
  readonly commits: number
}

export interface Row {
  readonly round: number
  readonly concurrency: number
  readonly agentplane: Cell
  readonly dbos: Cell
  /** agentplane runs/s over DBOS runs/s, within the round. */
  readonly ratio: number
}

export interface Round {
  readonly round: number
  /** Speed check at the round's start, ms (lower is faster). */
  readonly speedMs: number
  /** 1 / 5 / 15 minute load averages at the round's start. */
  readonly load: string
  readonly load1: number
  /** Set once every round is in: the speed check or the load says the machine was busy. */
  readonly loaded: boolean
}

export interface Results {
  readonly rounds: ReadonlyArray<Round>
  readonly rows: ReadonlyArray<Row>
}

export const CONCURRENCY = [1, 16] as const
/** A round's speed check this much slower than the run's fastest marks it loaded. */
export const LOADED_SPEED = 1.25
/** DBOS's own default pool size (`DEFAULT_POOL_SIZE` of its system database). */
export const DBOS_MIN_POOL = 10

export const run = async (
  db: Databases.Throwaway,
  dbos: Databases.Throwaway,
  options: { readonly quick: boolean; readonly rounds: number; readonly log: (line: string) => void },
): Promise<Results> => {
  const { quick, log } = options
  const sides: Record<Side, Opener> = { agentplane: agentplaneSide(db), dbos: dbosSide(dbos) }
  // First opens migrate (agentplane's tables, DBOS's system schema): done once, before anything is counted.
  for (const side of Object.values(sides)) await (await side.open(1, "prepare")).close()
  const rounds: Array<Omit<Round, "loaded">> = []
  const rows: Array<Row> = []
  for (let round = 1; round <= options.rounds; round++) {
    const speedMs = speedCheck()
    rounds.push({ round, speedMs, load: load(), load1: loadavg()[0] ?? 0 })
    log(`peers round ${round}: speed check ${speedMs.toFixed(0)} ms, load ${load()}`)
    for (const concurrency of CONCURRENCY) {
      const order: ReadonlyArray<Side> = round % 2 === 1 ? ["agentplane", "dbos"] : ["dbos", "agentplane"]
      const cells: Partial<Record<Side, Cell>> = {}
      for (const side of order) {
        cells[side] = await cell(side, sides[side], concurrency, `r${round}-c${concurrency}`, quick)
      }
      const { agentplane, dbos: peer } = cells
      if (agentplane === undefined || peer === undefined) throw new Error("a peer cell did not run")
      const row = { round, concurrency, agentplane, dbos: peer, ratio: agentplane.figures.perSec / peer.figures.perSec }
      log(
        `peers round ${round} c=${concurrency}: agentplane ${describe(agentplane)}; DBOS ${describe(peer)}; ratio ${row.ratio.toFixed(2)}`,
      )
      rows.push(row)
    }
  }
  const fastest = Math.min(...rounds.map((r) => r.speedMs))
  const cores = cpus().length
  return {
    rounds: rounds.map((r) => ({ ...r, loaded: r.speedMs > fastest * LOADED_SPEED || r.load1 >= cores })),
    rows,
  }
}

/** The medians of one concurrency over the rows of `rounds` (all, or the quiet ones). */
export interface Medians {
  readonly concurrency: number
  readonly rounds: number
  readonly agentplane: SideMedians
  readonly dbos: SideMedians
  /** Median of the per-round ratios. */
  readonly ratio: number
}

export interface SideMedians {
  readonly perSec: number
  readonly p50: number
  readonly p99: number
  readonly cpuPerOp: number
  readonly commits: number
}

export const medians = (results: Results, quietOnly: boolean): ReadonlyArray<Medians> => {
  const kept = new Set(results.rounds.filter((r) => !quietOnly || !r.loaded).map((r) => r.round))
  return CONCURRENCY.flatMap((concurrency) => {
    const rows = results.rows.filter((r) => r.concurrency === concurrency && kept.has(r.round))
    if (rows.length === 0) return []
    const side = (pick: (r: Row) => Cell): SideMedians => ({
      perSec: median(rows.map((r) => pick(r).figures.perSec)),
      p50: median(rows.map((r) => pick(r).figures.p50)),
      p99: median(rows.map((r) => pick(r).figures.p99)),
      cpuPerOp: median(rows.map((r) => pick(r).figures.cpuPerOp)),
      commits: median(rows.map((r) => pick(r).commits)),
    })
    return [
      {
        concurrency,
        rounds: rows.length,
        agentplane: side((r) => r.agentplane),
        dbos: side((r) => r.dbos),
        ratio: median(rows.map((r) => r.ratio)),
      },
    ]
  })
}

// internal

/** A side's runtime on a pool for `concurrency` callers: `call(i, key)` runs one two-effect run admitted under `key`. */
interface Opened {
  readonly pool: number
  readonly call: (i: number, key: string) => Promise<unknown>
  readonly close: () => Promise<void>
}

interface Opener {
  /** The database the side writes, whose `xact_commit` is its server count. */
  readonly database: string
  readonly open: (concurrency: number, tag: string) => Promise<Opened>
}

const agentplaneSide = (db: Databases.Throwaway): Opener => ({
  database: db.pgName,
  open: async (concurrency, tag) => {
    const rt = RuntimeBench.runtimeOn(db, "pg", concurrency)
    await rt.runtime()
    const tenant = TenantId.make(`bench-peers-${tag}`)
    return {
      pool: concurrency,
      call: (n, admissionKey) =>
        rt.runPromise(
          Effect.flatMap(Runtime.Runtime, (x) =>
            x.run(RuntimeBench.TwoEffects, Run.labeled({ n }, "bench"), { admissionKey }),
          ).pipe(
            Effect.tap((r) =>
              r.status._tag === "Succeeded" ? Effect.void : Effect.dieMessage(`bench run ended ${r.status._tag}`),
            ),
            Effect.provideService(Tenant, tenant),
          ) as Effect.Effect<unknown, unknown, RuntimeBench.Services>,
        ),
      close: () => rt.dispose(),
    }
  },
})

const dbosSide = (dbos: Databases.Throwaway): Opener => ({
  database: dbos.pgName,
  open: async (concurrency) => {
    // One more than the callers: DBOS's LISTEN/NOTIFY listener keeps one connection of this pool.
    const pool = Math.max(concurrency + 1, DBOS_MIN_POOL)
    // Loaded here, not at the top: a bench run without `--peers` never loads the DBOS SDK.
    const Dbos = await import("./peers/Dbos.js")
    const peer = await Dbos.launch(dbos.pgUrl, pool)
    return { pool, call: (n, workflowId) => peer.run(workflowId, n), close: peer.shutdown }
  },
})

const cell = async (side: Side, opener: Opener, concurrency: number, tag: string, quick: boolean): Promise<Cell> => {
  const count = quick ? 100 : 2000
  const cap = quick ? 0.3 : 3
  const key = (i: number) => `bench-peers-${tag}-${side}-${i}`
  const before = await RuntimeBench.settledCommits(opener.database)
  const opened = await opener.open(concurrency, `${tag}-${side}`)
  let figures: Figures
  let runs: number
  let busySeconds: number
  try {
    const start = performance.now()
    const call = (i: number) => opened.call(i, key(i))
    const warm = await measure(Math.max(concurrency * 3, 20), concurrency, 0, call, cap)
    figures = await measure(count, concurrency, 1_000_000, call, cap)
    busySeconds = (performance.now() - start) / 1000
    runs = warm.ops + figures.ops
  } finally {
    await opened.close()
  }
  const busy = (await RuntimeBench.settledCommits(opener.database)) - before
  const idleBefore = await RuntimeBench.settledCommits(opener.database)
  const idle = await opener.open(concurrency, `${tag}-${side}-idle`)
  try {
    await new Promise((resolve) => setTimeout(resolve, busySeconds * 1000))
  } finally {
    await idle.close()
  }
  const idleCommits = (await RuntimeBench.settledCommits(opener.database)) - idleBefore
  return { side, figures, pool: opened.pool, commits: (busy - idleCommits) / runs }
}

const describe = (c: Cell) =>
  `${c.figures.perSec.toFixed(0)} runs/s, p50 ${c.figures.p50.toFixed(2)} ms, p99 ${c.figures.p99.toFixed(2)} ms, CPU ${c.figures.cpuPerOp.toFixed(0)} µs/run, ${c.commits.toFixed(2)} commits/run`
