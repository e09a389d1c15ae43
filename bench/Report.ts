/**
 * The results section of BENCHMARKS.md, rendered from one run and written between the markers,
 * leaving the hand-written text around it alone.
 */
import { readFileSync, writeFileSync } from "node:fs"
import * as Baseline from "./Baseline.js"
import type * as Growth from "./Growth.js"
import type { Figures } from "./Harness.js"
import * as LogCost from "./LogCost.js"
import * as Peers from "./Peers.js"
import type * as PolicyCost from "./PolicyCost.js"
import * as RuntimeBench from "./Runtime.js"
import type * as Throughput from "./Throughput.js"

export const START = "<!-- bench:results:start -->"
export const END = "<!-- bench:results:end -->"
/** The runtime rows have a block of their own, so a run of one part (`--no-runtime` …) leaves the other's results in place. */
export const RUNTIME_START = "<!-- bench:runtime:start -->"
export const RUNTIME_END = "<!-- bench:runtime:end -->"
/** The peer cell (`--peers`) likewise. */
export const PEERS_START = "<!-- bench:peers:start -->"
export const PEERS_END = "<!-- bench:peers:end -->"
/** The policy cost (`--policy`) likewise. */
export const POLICY_START = "<!-- bench:policy:start -->"
export const POLICY_END = "<!-- bench:policy:end -->"
/** Issue 34's bar: Cedar deciding every effect costs at most this share more client CPU per run than `allowAll`. */
export const POLICY_TARGET = 1.1

/**
 * The wake-up floor's own block (issue 45): one row per backend, `| postgres | N |`, N the
 * wake-ups per second the runtime rows measured. Of a backend's rows it takes the one with the
 * most runs due (10,000 in a full run, 1,000 in a quick one) and of those the fastest caller
 * count: the floor asks what a backend sustains when many wake-ups fall due together.
 */
export const WAKEUPS_START = "<!-- bench:wakeups:start -->"
export const WAKEUPS_END = "<!-- bench:wakeups:end -->"
/** Issue 45's floor: timers falling due together, woken and resumed, per second on each backend. */
export const WAKEUPS_FLOOR = 3000

export const BASELINE_START = "<!-- bench:baseline:start -->"
export const BASELINE_END = "<!-- bench:baseline:end -->"

/** The transparency log's cost (`--log`) likewise. */
export const LOG_START = "<!-- bench:log:start -->"
export const LOG_END = "<!-- bench:log:end -->"

/** The throughput target (issue 15): every store operation at concurrency 16 on pg reaches this share of its ceiling. */
export const RATIO_TARGET = 0.85
/** The SQLite target (issue 15): every store operation on SQLite reaches this share of raw `better-sqlite3`. */
export const SQLITE_RATIO_TARGET = 0.5
/** The growth target: the largest size's timing over the smallest's. */
export const GROWTH_TARGET = 2

export interface Environment {
  readonly date: string
  readonly mode: string
  readonly machine: string
  readonly versions: string
  readonly command: string
  readonly seconds: number
  readonly load: string
  readonly speed: string
}

export const render = (
  env: Environment,
  throughput: ReadonlyArray<Throughput.Row>,
  growth: ReadonlyArray<Growth.Row>,
): string => {
  const lines: Array<string> = [...header(env)]
  lines.push("### Targets", "", ...targets(throughput, growth), "")
  lines.push("### Throughput and latency against the raw ceiling", "")
  lines.push(
    "ops/s over wall time; p50/p99 per call in ms. **store/raw** is the target ratio; **prepared** is the raw " +
      "statements as named (server-prepared) statements, over plain raw; prototypes are candidate store paths on the raw driver, over plain raw. Client CPU is " +
      "what this Node process spent per operation: with identical statements, the store's excess over raw is the whole of its overhead.",
    "",
  )
  lines.push(
    "| operation | backend | c | store ops/s | store p50 / p99 | raw ops/s | raw p50 / p99 | store/raw | client CPU µs/op store / raw | prepared/raw | prototypes/raw |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
  )
  for (const r of throughput) {
    lines.push(
      `| ${r.op} | ${r.dialect} | ${r.concurrency} | ${rate(r.store)} | ${lat(r.store)} | ${rate(r.raw)} | ${lat(r.raw)} | ${ratioCell(r)} | ${r.store.cpuPerOp.toFixed(0)} / ${r.raw.cpuPerOp.toFixed(0)} | ${r.prepared === undefined ? "–" : ratio(r.prepared.perSec / r.raw.perSec)} | ${r.prototypes.map((p) => `${p.name} ${ratio(p.figures.perSec / r.raw.perSec)}`).join("; ") || "–"} |`,
    )
  }
  lines.push("", "### Growth: reads as tables grow", "")
  lines.push(
    "Median ms of the store call at each size (rows per table); **stale** is before `ANALYZE` (statistics as " +
      "the previous size left them, autovacuum held off), **analyzed** after it. Ratio = largest size over smallest, analyzed. " +
      "Plan = the indexes the plan uses (`Seq Scan` / `SCAN` where it reads a whole table, and any sort: pg `EXPLAIN`, SQLite `EXPLAIN QUERY PLAN`) " +
      "for each statement of the read, at the largest size, analyzed, with the stale plan where it differs.",
    "",
  )
  const sizes = [...new Set(growth.flatMap((g) => g.points.map((p) => p.rows)))].sort((a, b) => a - b)
  lines.push(
    `| read | backend | ${sizes.map((s) => `${count(s)} stale / analyzed`).join(" | ")} | ratio | plan |`,
    `|---|---|${sizes.map(() => "--:").join("|")}|--:|---|`,
  )
  for (const g of growth) {
    const cells = sizes.map((s) => {
      const p = g.points.find((x) => x.rows === s)
      return p === undefined ? "–" : `${ms(p.stale)} / ${ms(p.analyzed)}`
    })
    lines.push(
      `| ${g.read} | ${g.dialect} | ${cells.join(" | ")} | ${growthCell(g.ratio)} | ${g.plan.replaceAll("|", "\\|")} |`,
    )
  }
  const proposed = growth.filter((g) => g.proposed !== undefined)
  if (proposed.length > 0) {
    lines.push(
      "",
      "With the proposed indexes (bench/Growth.ts `PROPOSALS`) built at the largest size and analyzed; ratio over the smallest size without them:",
      "",
      "| read | backend | index | ms | ratio | plan |",
      "|---|---|---|--:|--:|---|",
    )
    for (const g of proposed) {
      const p = g.proposed
      if (p === undefined) continue
      lines.push(
        `| ${g.read} | ${g.dialect} | ${p.index} | ${ms(p.ms)} | ${growthCell(p.ratio)} | ${p.plan.replaceAll("|", "\\|")} |`,
      )
    }
  }
  const autovacuum = growth.flatMap((g) => g.autovacuum ?? [])
  if (autovacuum.length > 0) {
    lines.push("", "### What autovacuum would have done", "", ...autovacuum.map((a) => `- ${a}`))
  }
  return lines.join("\n")
}

/** The runtime block: its own header, then the rows of `bench/Runtime.ts`. */
export const renderRuntime = (env: Environment, runtime: RuntimeBench.Results): string =>
  [...header(env), ...runtimeSection(runtime)].join("\n")

/** The peer block: its own header, each round's machine reading, the rows of every round, then the medians (all rounds, and quiet rounds only). */
export const renderPeers = (env: Environment, peers: Peers.Results): string => {
  const loaded = new Map(peers.rounds.map((r) => [r.round, r.loaded]))
  const lines: Array<string> = [...header(env)]
  lines.push(
    "Rounds: the speed check (ms, lower is faster) and the load average read at each round's start; " +
      `**loaded** when the check took more than ${Peers.LOADED_SPEED}× the fastest round's or the 1-minute load reached the core count.`,
    "",
    "| round | speed check ms | load (1 / 5 / 15 min) | |",
    "|--:|--:|--:|---|",
    ...peers.rounds.map(
      (r) => `| ${r.round} | ${r.speedMs.toFixed(0)} | ${r.load} | ${r.loaded ? "loaded" : "quiet"} |`,
    ),
    "",
    "Per round: runs/s, p50 / p99 ms, client CPU µs per run, server commits per run (idle pass subtracted); " +
      "**ratio** = agentplane runs/s over DBOS runs/s in the same round. Pool: agentplane the concurrency, DBOS the concurrency + 1 (its listener keeps one) but at least its default of " +
      `${Peers.DBOS_MIN_POOL}.`,
    "",
    "| round | c | agentplane runs/s | p50 / p99 | CPU µs/run | commits/run | DBOS runs/s | p50 / p99 | CPU µs/run | commits/run | ratio |",
    "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ...peers.rows.map(
      (r) =>
        `| ${r.round}${loaded.get(r.round) ? " (loaded)" : ""} | ${r.concurrency} | ${rate(r.agentplane.figures)} | ${lat(r.agentplane.figures)} | ${r.agentplane.figures.cpuPerOp.toFixed(0)} | ${r.agentplane.commits.toFixed(2)} | ${rate(r.dbos.figures)} | ${lat(r.dbos.figures)} | ${r.dbos.figures.cpuPerOp.toFixed(0)} | ${r.dbos.commits.toFixed(2)} | ${ratio(r.ratio)} |`,
    ),
    "",
    "Medians over the rounds; **ratio** is the median of the per-round ratios, not the ratio of the medians.",
    "",
    "| rounds | c | agentplane runs/s | p50 / p99 | CPU µs/run | commits/run | DBOS runs/s | p50 / p99 | CPU µs/run | commits/run | ratio |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  )
  for (const quietOnly of [false, true]) {
    for (const m of Peers.medians(peers, quietOnly)) {
      const side = (s: Peers.SideMedians) =>
        `${s.perSec.toFixed(0)} | ${s.p50.toFixed(2)} / ${s.p99.toFixed(2)} | ${s.cpuPerOp.toFixed(0)} | ${s.commits.toFixed(2)}`
      lines.push(
        `| ${quietOnly ? "quiet" : "all"} (${m.rounds}) | ${m.concurrency} | ${side(m.agentplane)} | ${side(m.dbos)} | ${ratio(m.ratio)} |`,
      )
    }
  }
  if (peers.rounds.every((r) => r.loaded)) lines.push("| quiet (0) | – | no round was quiet | | | | | | | | |")
  lines.push("", ...peerFloors(peers))
  return lines.join("\n")
}

/**
 * The run-cost floors (issue 45), read off the quiet rounds' medians, or every round's when none
 * was quiet (then said so): the ratio at c16 and c1, client CPU per run at c16, server commits
 * per run at c1 and c16.
 */
export const PEER_FLOORS = { ratioC16: 2.5, ratioC1: 1.3, cpuC16: 1000, commitsC1: 3, commitsC16: 1 } as const

const peerFloors = (peers: Peers.Results): ReadonlyArray<string> => {
  const quiet = peers.rounds.some((r) => !r.loaded)
  const at = (c: number) => Peers.medians(peers, quiet).find((m) => m.concurrency === c)
  const c1 = at(1)
  const c16 = at(16)
  if (c1 === undefined || c16 === undefined) return []
  const mark = (met: boolean) => (met ? "met" : "**not met**")
  const F = PEER_FLOORS
  return [
    `Floors (\`PEER_FLOORS\` in bench/Report.ts), on the ${quiet ? "quiet rounds'" : "medians of every round (none was quiet)"}:`,
    `ratio at c16 ${c16.ratio.toFixed(2)} (≥ ${F.ratioC16}: ${mark(c16.ratio >= F.ratioC16)}); ` +
      `ratio at c1 ${c1.ratio.toFixed(2)} (≥ ${F.ratioC1}: ${mark(c1.ratio >= F.ratioC1)}); ` +
      `client CPU at c16 ${c16.agentplane.cpuPerOp.toFixed(0)} µs/run (≤ ${F.cpuC16}: ${mark(c16.agentplane.cpuPerOp <= F.cpuC16)}); ` +
      `commits/run at c1 ${c1.agentplane.commits.toFixed(2)} (≤ ${F.commitsC1}: ${mark(c1.agentplane.commits <= F.commitsC1)}), ` +
      `at c16 ${c16.agentplane.commits.toFixed(2)} (< ${F.commitsC16}: ${mark(c16.agentplane.commits < F.commitsC16)}).`,
  ]
}

/** The policy cost table: client CPU per two-effect run, `allowAll` against a Cedar bundle that permits everything, per round. */
export const renderPolicy = (env: Environment, result: PolicyCost.Result): string =>
  [
    ...header(env),
    `The keyed two-effect run on PostgreSQL at concurrency ${result.concurrency}, ${result.runs} runs per side per round, the sides interleaved in one process, the side that goes first alternating by round. Client CPU per run (µs):`,
    "",
    "| round | first | `PolicyEngine.allowAll` | Cedar, permit all | Cedar / allowAll |",
    "|--:|:--|--:|--:|--:|",
    ...result.rounds.map(
      (r, i) =>
        `| ${i + 1} | ${r.cedarFirst ? "Cedar" : "allowAll"} | ${r.allowAllUs.toFixed(0)} | ${r.cedarUs.toFixed(0)} | ${r.ratio.toFixed(2)} |`,
    ),
    `| **median** | | | | **${result.ratio.toFixed(2)}** (bar ≤ ${POLICY_TARGET.toFixed(2)}: ${result.ratio <= POLICY_TARGET ? "met" : "**not met**"}) |`,
  ].join("\n")

/** The SQLite baseline table: this checkout against the commit issue 32 was filed on, per round. */
export const renderBaseline = (env: Environment, result: Baseline.Results): string =>
  [
    ...header(env),
    `The keyed two-effect run on SQLite at concurrency ${Baseline.CONCURRENCY}, each cell in a process of its own on a fresh file: this checkout against a worktree of \`${result.base.slice(0, 7)}\` (\`Baseline.BASE\`, the reference the SQLite floor \`Baseline.TARGET\` is measured against), the sides alternating which goes first.`,
    "",
    "| round | speed check ms | load (1 / 5 / 15 min) | current runs/s | CPU µs/run | baseline runs/s | CPU µs/run | current / baseline |",
    "|--:|--:|--:|--:|--:|--:|--:|--:|",
    ...result.rounds.map(
      (r) =>
        `| ${r.round} | ${r.speedMs.toFixed(0)} | ${r.load} | ${r.current.perSec.toFixed(0)} | ${r.current.cpuPerOp.toFixed(0)} | ${r.baseline.perSec.toFixed(0)} | ${r.baseline.cpuPerOp.toFixed(0)} | ${r.ratio.toFixed(2)} |`,
    ),
    `| **median** | | | | | | | **${result.ratio.toFixed(2)}** (bar ≥ ${Baseline.TARGET.toFixed(2)}: ${result.ratio >= Baseline.TARGET ? "met" : "**not met**"}) |`,
  ].join("\n")

/** The log's cost: seals/s with integration running beside them against none, per round; then the reads at the large size. */
export const renderLog = (env: Environment, result: LogCost.Result): string =>
  [
    ...header(env),
    `Seals/s: one seal = a fresh run leased, three notes appended, \`JournalStore.seal\`; ${LogCost.CONCURRENCY} at a time. **On**: one tenant sealed while a fiber integrates it as \`serve --log-key\` does, up to ${LogCost.BATCH} leaves a batch until one comes back short, then a pause of ${LogCost.EVERY_MS} ms (5× as often as \`--log-every 1\`, the least the flag takes: more and smaller batches, so no cheaper), on the same pool or file; **off**: another tenant, no integration. Interleaved by round, the first side alternating. **Backlog**: the on-tenant's leaves sealed but not yet integrated when its pass ended.`,
    "",
    "| backend | round | first | off seals/s | on seals/s | on / off | backlog |",
    "|---|--:|:--|--:|--:|--:|--:|",
    ...result.seals.flatMap((row) => [
      ...row.rounds.map(
        (r) =>
          `| ${row.dialect} | ${r.round} | ${r.onFirst ? "on" : "off"} | ${r.off.perSec.toFixed(0)} | ${r.on.perSec.toFixed(0)} | ${r.ratio.toFixed(2)} | ${r.backlog} |`,
      ),
      `| ${row.dialect} | **median** | | | | **${row.ratio.toFixed(2)}** | |`,
    ]),
    "",
    ...result.seals.map(
      (row) =>
        `- ${row.dialect}: ${row.seals} seals per side per round; the integrator hashed in ${row.integratedDuring.toLocaleString("en-US")} leaves while the on passes ran, and once caught up the log held ${row.finalSize.toLocaleString("en-US")} of the ${row.sealed.toLocaleString("en-US")} leaves sealed, under a checkpoint of that size.`,
    ),
    "",
    "Reads of a log of the size shown, one call at a time (ms, p50 / p99): `checkpoint()`; `inclusionProof(run, size)` of a random run at the latest size; `consistencyProof(from, to)` of random sizes. The seals are written by SQL and the tree built by `LogStore.integrate` in batches of 100k (times shown); pg analyzed after the load.",
    "",
    "| backend | leaves | seeded s | integrated s | samples | checkpoint | inclusion proof | consistency proof |",
    "|---|--:|--:|--:|--:|--:|--:|--:|",
    ...result.latency.map(
      (l) =>
        `| ${l.dialect} | ${count(l.leaves)} | ${l.seedSeconds.toFixed(1)} | ${l.integrateSeconds.toFixed(1)} | ${l.checkpoint.samples} | ${ms(l.checkpoint.p50)} / ${ms(l.checkpoint.p99)} | ${ms(l.inclusion.p50)} / ${ms(l.inclusion.p99)} | ${ms(l.consistency.p50)} / ${ms(l.consistency.p99)} |`,
    ),
    "",
    "The proofs' node lookup (`nodesOf`), one statement for an inclusion proof's nodes at that size, median ms and plan: as an OR of `(level = ? AND idx = ?)` pairs, and as the UNION ALL of primary-key probes the store sends.",
    "",
    "| backend | nodes | OR of pairs ms | its plan | UNION ALL ms | its plan |",
    "|---|--:|--:|:--|--:|:--|",
    ...result.latency.map(
      (l) =>
        `| ${l.dialect} | ${l.lookupNodes} | ${ms(l.orChain.ms)} | ${l.orChain.plan} | ${ms(l.unionAll.ms)} | ${l.unionAll.plan} |`,
    ),
  ].join("\n")

/** Replaces the section between the markers in `path` (appending the markers if absent). */
export const write = (path: string, section: string, start = START, end = END): void => {
  let text = ""
  try {
    text = readFileSync(path, "utf8")
  } catch {
    text = "# Benchmarks\n"
  }
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  const block = `${start}\n${section}\n${end}`
  const next =
    from >= 0 && to > from ? `${text.slice(0, from)}${block}${text.slice(to + end.length)}` : `${text}\n${block}\n`
  writeFileSync(path, next)
}

// internal

const header = (env: Environment): ReadonlyArray<string> => [
  `_Generated by \`${env.command}\` on ${env.date} (${env.mode}, ${env.seconds.toFixed(0)} s)._`,
  "",
  `- Machine: ${env.machine}`,
  `- Load: ${env.load}`,
  `- Speed: ${env.speed}`,
  `- Versions: ${env.versions}`,
  "",
]

const runtimeSection = (r: RuntimeBench.Results): ReadonlyArray<string> => [
  "One run = admit, two mutating effects, seal (`bench/Runtime.ts`), each call a whole `Runtime.run`. " +
    "**Commits per run (server)**: `pg_stat_database.xact_commit` across a pass of runs, less a pass of none. " +
    "**Client**: one run's statements through `Capture`: transactions (`BEGIN` … `COMMIT`) + statements outside one (each autocommitted); SQLite has no server count.",
  "",
  "| backend | c | runs/s | p50 / p99 ms | commits per run (server) | client: transactions + single statements |",
  "|---|--:|--:|--:|--:|--:|",
  ...r.runs.map(
    (row) =>
      `| ${row.dialect} | ${row.concurrency} | ${rate(row.figures)} | ${lat(row.figures)} | ${row.serverCommits === undefined ? "–" : row.serverCommits.toFixed(2)} | ${row.transactions} + ${row.statements} = ${row.transactions + row.statements} |`,
  ),
  "",
  "Replay: median ms of `resume` (a run of its own each time, replayed to its end, then live for its last step) and of Strict `replay`, by journal length; µs per record beside each. " +
    "**Linearity** = per-record time at the largest length over that at the one before (10× shorter): about 1 when time grows linearly, about 10 when quadratically.",
  "",
  `| backend | ${(r.replay[0]?.points ?? []).map((p) => `${count(p.records)} records resume / strict ms (µs/record)`).join(" | ")} | linearity resume / strict |`,
  `|---|${(r.replay[0]?.points ?? []).map(() => "--:").join("|")}|--:|`,
  ...r.replay.map(
    (row) =>
      `| ${row.dialect} | ${row.points
        .map(
          (p) =>
            `${ms(p.resumeMs)} / ${ms(p.strictMs)} (${perRecord(p.resumeMs, p.records)} / ${perRecord(p.strictMs, p.records)})`,
        )
        .join(
          " | ",
        )} | ${RuntimeBench.linearity(row.points, (p) => p.resumeMs).toFixed(2)} / ${RuntimeBench.linearity(row.points, (p) => p.strictMs).toFixed(2)} |`,
  ),
  "",
  `Wake-ups: runs suspended on a timer already due, fired through \`Runtime.fireTimers(128)\` by 1 or 4 concurrent callers (instances' timer passes) until every run is sealed; floor ≥ ${WAKE_FLOOR}/s. ` +
    "A pass claims up to 128 due timers and takes their runs' leases in one statement (`acquireMany`); each wake-up reads its run's journal and stages the answer, and the resume (replay, conclusion) commits the answer, the seal, the lease's release and the disarm together, 16 resumes at a time: on pg one autocommitted statement (the disarm folded into the seal), on SQLite one transaction whose COMMIT the resumes ready together share (group commit).",
  "",
  "| backend | due | callers | wake-ups/s | seconds | a lone timer's wake-up (its claim and lease included; a full batch shares those), client: transactions + single statements |",
  "|---|--:|--:|--:|--:|--:|",
  ...r.wakes.map(
    (w) =>
      `| ${w.dialect} | ${count(w.due)} | ${w.callers} | ${w.perSec < WAKE_FLOOR ? `**${w.perSec.toFixed(0)}** ✗` : w.perSec.toFixed(0)} | ${w.seconds.toFixed(1)} | ${w.transactions} + ${w.statements} = ${w.transactions + w.statements} |`,
  ),
  "",
  "Event → resumed run: one `deliver` at a time, timed until its run is sealed (`idle`), with the others still suspended.",
  "",
  "| backend | suspended | samples | p50 / p99 ms |",
  "|---|--:|--:|--:|",
  ...r.latency.map((l) => `| ${l.dialect} | ${count(l.suspended)} | ${l.samples} | ${ms(l.p50)} / ${ms(l.p99)} |`),
]

const WAKE_FLOOR = WAKEUPS_FLOOR

/** The wake-ups block: a backend's rate at its largest due count, fastest caller count (see `WAKEUPS_START`). */
export const renderWakeups = (env: Environment, wakes: ReadonlyArray<RuntimeBench.WakeRow>): string => {
  const rows = (["pg", "sqlite"] as const).flatMap((dialect) => {
    const own = wakes.filter((w) => w.dialect === dialect)
    const due = Math.max(...own.map((w) => w.due))
    const best = own.filter((w) => w.due === due).sort((a, b) => b.perSec - a.perSec)[0]
    return best === undefined ? [] : [{ name: dialect === "pg" ? "postgres" : "sqlite", row: best }]
  })
  return [
    ...header(env),
    `Timer wake-ups per second, floor ≥ ${WAKEUPS_FLOOR} on each backend: runs suspended on a timer already due, fired through \`Runtime.fireTimers(128)\` until every one is sealed (the runtime rows above, largest due count, fastest caller count).`,
    "",
    "| backend | wake-ups/s | due | callers | floor met |",
    "|---|--:|--:|--:|---|",
    ...rows.map(
      ({ name, row }) =>
        `| ${name} | ${row.perSec.toFixed(0)} | ${count(row.due)} | ${row.callers} | ${row.perSec >= WAKEUPS_FLOOR ? "yes" : "no"} |`,
    ),
  ].join("\n")
}

const perRecord = (msTotal: number, records: number) => ((msTotal * 1000) / records).toFixed(0)

const targets = (throughput: ReadonlyArray<Throughput.Row>, growth: ReadonlyArray<Growth.Row>) => {
  const grew = growth.filter((g) => g.ratio > GROWTH_TARGET)
  const line = (label: string, target: number, judged: ReadonlyArray<Throughput.Row>) => {
    const missed = judged.filter((r) => r.store.perSec / r.raw.perSec < target)
    return `- Store/raw ${label} ≥ ${target}: ${judged.length - missed.length} of ${judged.length} met${missed.length === 0 ? "." : `; missed: ${missed.map((r) => `${r.op} (${ratio(r.store.perSec / r.raw.perSec)})`).join(", ")}.`}`
  }
  return [
    line(
      "at concurrency 16 on PostgreSQL",
      RATIO_TARGET,
      throughput.filter((r) => r.dialect === "pg" && r.concurrency === 16),
    ),
    line(
      "on SQLite",
      SQLITE_RATIO_TARGET,
      throughput.filter((r) => r.dialect === "sqlite"),
    ),
    `- Growth ratio ≤ ${GROWTH_TARGET}: ${growth.length - grew.length} of ${growth.length} met${grew.length === 0 ? "." : `; missed: ${grew.map((g) => `${g.read} on ${g.dialect} (${g.ratio.toFixed(1)})`).join(", ")}.`}`,
  ]
}

const ratioCell = (r: Throughput.Row) => {
  const value = r.store.perSec / r.raw.perSec
  const target =
    r.dialect === "sqlite" ? SQLITE_RATIO_TARGET : r.concurrency === 16 ? RATIO_TARGET : Number.NEGATIVE_INFINITY
  return value < target ? `**${ratio(value)}** ✗` : ratio(value)
}
const growthCell = (value: number) => (value > GROWTH_TARGET ? `**${value.toFixed(1)}** ✗` : value.toFixed(1))
const rate = (f: Figures) => f.perSec.toFixed(0)
const lat = (f: Figures) => `${f.p50.toFixed(2)} / ${f.p99.toFixed(2)}`
const ratio = (value: number) => value.toFixed(2)
const ms = (value: number) => (value >= 10 ? value.toFixed(0) : value.toFixed(2))
const count = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n))
