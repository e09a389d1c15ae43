/**
 * `npm run bench [-- --quick]`: every store hot path against its raw ceiling on PostgreSQL and
 * SQLite, then the growth reads, then the results section of BENCHMARKS.md rewritten. Runs in a
 * throwaway database and file of its own, removed at the end, on error and on Ctrl-C.
 */
import { readFileSync } from "node:fs"
import { cpus, loadavg, totalmem } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import Database from "better-sqlite3"
import * as Databases from "./Databases.js"
import * as Growth from "./Growth.js"
import * as Report from "./Report.js"
import * as RuntimeBench from "./Runtime.js"
import * as Throughput from "./Throughput.js"

const main = async () => {
  const args = process.argv.slice(2)
  const quick = args.includes("--quick")
  const skipGrowth = args.includes("--no-growth")
  const skipThroughput = args.includes("--no-throughput")
  const skipRuntime = args.includes("--no-runtime")
  const log = (line: string) => process.stdout.write(`${line}\n`)
  const started = performance.now()
  const loadAtStart = load()
  const speedAtStart = speedCheck()
  const db = await Databases.create()
  log(`bench: database ${db.pgName}, sqlite ${db.sqliteFile}${quick ? " (quick)" : ""}`)
  let removing: Promise<void> | undefined
  const cleanup = () => {
    removing ??= db.remove()
    return removing
  }
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log(`bench: ${signal}, dropping ${db.pgName}`)
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
    const runtime = skipRuntime ? undefined : await RuntimeBench.run(db, { quick, log })
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
      speed: `a fixed single-core workload (\`speedCheck\` in bench/Main.ts) took ${speedAtStart.toFixed(0)} ms at the start and ${speedCheck().toFixed(0)} ms at the end; lower is faster. This VM's speed has drifted by up to 1.6× within an hour at the same load, so compare figures of one run, or of runs with a like check`,
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
    }
    log(`\nbench: ${path} rewritten in ${seconds.toFixed(0)} s\n`)
    for (const section of sections) log(section)
  } finally {
    await cleanup()
  }
}

/**
 * Milliseconds a fixed piece of single-core work takes (integer arithmetic, then JSON in and out,
 * the kind of work a wake-up does): the machine's speed at the moment, since the same code on the
 * same idle VM has run at rates 1.6× apart an hour apart. The best of three, to skip a stray pause.
 */
const speedCheck = (): number => {
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < 3; round++) {
    const start = performance.now()
    let x = 0
    for (let i = 0; i < 10_000_000; i++) x = (x * 31 + i) | 0
    let kept = 0
    for (let i = 0; i < 100_000; i++)
      kept += (JSON.parse(JSON.stringify({ i, s: "x".repeat(20), a: [1, 2, 3] })) as { i: number }).i & 1
    best = Math.min(best, performance.now() - start)
    sink = x + kept
  }
  return best
}

/** Where `speedCheck` leaves its results, so no loop of it is work nothing reads. */
export let sink = 0

/** The 1 / 5 / 15 minute load averages: the bench shares the machine's cores with whatever else runs. */
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ")

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
