/**
 * `npm run bench [-- --quick]`: every store hot path against its raw ceiling on PostgreSQL and
 * SQLite, then the growth reads, then the results section of BENCHMARKS.md rewritten. Runs in a
 * throwaway database and file of its own, removed at the end, on error and on Ctrl-C. `--peers`
 * adds the peer cell (agentplane against DBOS Transact, `bench/Peers.ts`), whose DBOS system
 * tables live in a second throwaway database, removed likewise. `--policy` adds the cost of deciding
 * every effect with Cedar (`bench/PolicyCost.ts`). `--baseline` adds the SQLite run against the code
 * issue 32 was filed on, from a worktree of that commit (`bench/Baseline.ts`). `--log` adds the
 * transparency log's cost: seals/s with integration on and off, and proof latency at 1M leaves
 * (`bench/LogCost.ts`). `--wakeups` runs only the runtime's wake-up rows on both backends and
 * rewrites the wake-ups block (the full runtime rows rewrite it too).
 */
import { readFileSync } from "node:fs"
import { cpus, totalmem } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import Database from "better-sqlite3"
import * as Baseline from "./Baseline.js"
import * as Databases from "./Databases.js"
import * as Growth from "./Growth.js"
import * as LogCost from "./LogCost.js"
import { load, speedCheck } from "./Machine.js"
import * as Peers from "./Peers.js"
import * as PolicyCost from "./PolicyCost.js"
import * as Report from "./Report.js"
import * as RuntimeBench from "./Runtime.js"
import * as Throughput from "./Throughput.js"

const main = async () => {
  const args = process.argv.slice(2)
  const quick = args.includes("--quick")
  const wakeupsOnly = args.includes("--wakeups")
  const skipGrowth = wakeupsOnly || args.includes("--no-growth")
  const skipThroughput = wakeupsOnly || args.includes("--no-throughput")
  const skipRuntime = args.includes("--no-runtime")
  const peers = args.includes("--peers")
  const policy = args.includes("--policy")
  const baseline = args.includes("--baseline")
  const logCell = args.includes("--log")
  const log = (line: string) => process.stdout.write(`${line}\n`)
  const started = performance.now()
  const loadAtStart = load()
  const speedAtStart = speedCheck()
  const db = await Databases.create()
  const dbosDb = peers ? await Databases.create("_dbos") : undefined
  log(
    `bench: database ${db.pgName}${dbosDb === undefined ? "" : ` and ${dbosDb.pgName} (DBOS)`}, sqlite ${db.sqliteFile}${quick ? " (quick)" : ""}`,
  )
  let removing: Promise<void> | undefined
  const cleanup = () => {
    removing ??= Promise.all([db.remove(), dbosDb?.remove()]).then(() => undefined)
    return removing
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log(`bench: ${signal}, dropping ${db.pgName}${dbosDb === undefined ? "" : ` and ${dbosDb.pgName}`}`)
      void cleanup().finally(() => process.exit(130))
    })
  }
  try {
    const throughput = skipThroughput ? [] : await Throughput.run(db, { quick, log })
    const growth = skipGrowth
      ? []
      : await Growth.run(db, {
          sizes: quick ? Growth.QUICK_SIZES : Growth.FULL_SIZES,
          reps: quick ? 3 : 7,
          log,
        })
    const wakesAlone = wakeupsOnly ? await wakeupRows(db, quick, log) : undefined
    const runtime = skipRuntime || wakeupsOnly ? undefined : await RuntimeBench.run(db, { quick, log })
    const peer = dbosDb === undefined ? undefined : await Peers.run(db, dbosDb, { quick, rounds: quick ? 3 : 5, log })
    const policyCost = policy ? await PolicyCost.run(db, { quick, log }) : undefined
    const logCost = logCell ? await LogCost.run(db, { quick, log }) : undefined
    const base = baseline ? await Baseline.run({ quick, rounds: quick ? 3 : 5, log }) : undefined
    const seconds = (performance.now() - started) / 1000
    const env: Report.Environment = {
      date: new Date().toISOString().slice(0, 16).replace("T", " "),
      mode: quick
        ? "quick: cells capped at 0.15 s, growth to 10k rows, replay to 1k records"
        : "full: cells capped at 2 s, growth to 1M rows, replay to 10k records",
      machine: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${process.platform}`,
      versions: await versions(db.pgUrl),
      command: `npm run bench${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`,
      seconds,
      load: `load average (1 / 5 / 15 min) ${loadAtStart} at the start, ${load()} at the end, on ${cpus().length} cores`,
      speed: `a fixed single-core workload (\`speedCheck\` in bench/Machine.ts) took ${speedAtStart.toFixed(0)} ms at the start and ${speedCheck().toFixed(0)} ms at the end; lower is faster. This VM's speed has drifted by up to 1.6× within an hour at the same load, so compare figures of one run, or of runs with a like check`,
    }
    const path = join(import.meta.dirname, "..", "BENCHMARKS.md")
    const sections: Array<string> = []
    if (!skipThroughput || !skipGrowth) {
      const section = Report.render(env, throughput, growth)
      Report.write(path, section)
      sections.push(section)
    }
    if (runtime !== undefined) {
      const section = Report.renderRuntime(env, runtime)
      Report.write(path, section, Report.RUNTIME_START, Report.RUNTIME_END)
      sections.push(section)
      const wakeups = Report.renderWakeups(env, runtime.wakes)
      Report.write(path, wakeups, Report.WAKEUPS_START, Report.WAKEUPS_END)
      sections.push(wakeups)
    }
    if (wakesAlone !== undefined) {
      const mode = quick ? "quick: 1,000 runs due per backend" : "wake-ups only: 10,000 runs due per backend"
      const section = Report.renderWakeups({ ...env, mode }, wakesAlone)
      Report.write(path, section, Report.WAKEUPS_START, Report.WAKEUPS_END)
      sections.push(section)
    }
    if (peer !== undefined) {
      const section = Report.renderPeers(
        {
          ...env,
          mode: quick
            ? "quick: 3 rounds, each side's cell up to 100 runs or 0.3 s"
            : "full: 5 rounds, each side's cell up to 2,000 runs or 3 s",
          versions: `${env.versions}, @dbos-inc/dbos-sdk ${pkg("@dbos-inc/dbos-sdk")}`,
        },
        peer,
      )
      Report.write(path, section, Report.PEERS_START, Report.PEERS_END)
      sections.push(section)
    }
    if (policyCost !== undefined) {
      const section = Report.renderPolicy(env, policyCost)
      Report.write(path, section, Report.POLICY_START, Report.POLICY_END)
      sections.push(section)
    }
    if (base !== undefined) {
      const section = Report.renderBaseline(
        {
          ...env,
          mode: quick
            ? "quick: 3 rounds, each side's cell up to 200 runs or 0.5 s"
            : "full: 5 rounds, each side's cell up to 2,000 runs or 3 s",
        },
        base,
      )
      Report.write(path, section, Report.BASELINE_START, Report.BASELINE_END)
      sections.push(section)
    }
    if (logCost !== undefined) {
      const section = Report.renderLog(
        {
          ...env,
          mode: quick
            ? "quick: 4 rounds of 1,000 (SQLite) or 300 (pg) seals per side, reads at 10k leaves"
            : "full: 6 rounds of 5,000 (SQLite) or 2,000 (pg) seals per side, reads at 1M leaves",
        },
        logCost,
      )
      Report.write(path, section, Report.LOG_START, Report.LOG_END)
      sections.push(section)
    }
    log(`\nbench: ${path} rewritten in ${seconds.toFixed(0)} s\n`)
    for (const section of sections) log(section)
  } finally {
    await cleanup()
  }
}

/** The wake-up rows alone, PostgreSQL then SQLite, as the runtime rows measure them. */
const wakeupRows = async (db: Databases.Throwaway, quick: boolean, log: (line: string) => void) => {
  const wakes: Array<RuntimeBench.WakeRow> = []
  for (const dialect of ["pg", "sqlite"] as const) {
    const rows = await RuntimeBench.wakeRows(db, dialect, quick ? RuntimeBench.QUICK_DUE : [10_000], quick, log)
    wakes.push(...rows.wakes)
  }
  return wakes
}

const versions = async (pgUrl: string): Promise<string> => {
  const sqlite = new Database(":memory:")
  const sqliteVersion = (sqlite.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v
  sqlite.close()
  return [
    `Node ${process.version}`,
    `PostgreSQL ${await Databases.serverVersion(pgUrl)}`,
    `SQLite ${sqliteVersion} (better-sqlite3 ${pkg("better-sqlite3")})`,
    `pg ${pkg("pg")}`,
    `effect ${pkg("effect")}`,
    `@effect/sql ${pkg("@effect/sql")}`,
    `@effect/sql-pg ${pkg("@effect/sql-pg")}`,
    `@effect/sql-sqlite-node ${pkg("@effect/sql-sqlite-node")}`,
  ].join(", ")
}

const pkg = (name: string): string => {
  try {
    const text = readFileSync(join(import.meta.dirname, "..", "node_modules", name, "package.json"), "utf8")
    return (JSON.parse(text) as { version: string }).version
  } catch {
    return "?"
  }
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
  process.exitCode = 1
})
