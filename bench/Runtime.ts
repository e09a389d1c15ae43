/**
 * The runtime's own rows: a run of two mutating effects (admit, two effects, seal) at concurrency
 * 1 and 16 on PostgreSQL and SQLite, with the commits it costs, and replay (Resume and Strict)
 * against the journal's length.
 *
 * **Commits per run** are counted twice. From the server: `pg_stat_database.xact_commit` of the
 * bench database across a pass of runs, read from another database so the reads are not counted,
 * each pass's pool closed before reading because a backend flushes its counters on exit (an idle
 * one may hold them for 10 s), less the same pass with no runs (the layer's start-up). From the
 * client, on both backends: the statements of one run through `Capture` — each transaction
 * (`BEGIN` … `COMMIT`) and each statement outside one (autocommitted) is a commit. SQLite has no
 * server to ask, so only the client count exists there.
 *
 * **Replay** times `resume` and Strict `replay` of runs whose journal holds 10 … 10,000 records
 * (non-mutating reads, which ride in one batch), then a step that fails, so the run concludes
 * `failed` and stays open to resume. Each Resume gets a run of its own (it appends); Strict
 * writes nothing and reuses one. Linear growth: the time per record stays flat as length grows.
 * Quick mode: fewer runs, one replay per length, lengths to 1,000.
 */
import { performance } from "node:perf_hooks"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime, Option, Schema } from "effect"
import pg from "pg"
import * as Calendar from "../src/domain/Calendar.js"
import * as CorrelationKey from "../src/domain/CorrelationKey.js"
import * as Deadline from "../src/domain/Deadline.js"
import * as Digest from "../src/domain/Digest.js"
import { InboundEvent } from "../src/domain/Event.js"
import { generateRunId, type RunId } from "../src/domain/Ids.js"
import * as Journal from "../src/domain/Journal.js"
import * as Run from "../src/domain/Run.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import { Timer } from "../src/domain/Timer.js"
import * as Migrations from "../src/layers/Migrations.js"
import * as PgBackend from "../src/layers/PgBackend.js"
import * as SqliteBackend from "../src/layers/SqliteBackend.js"
import * as SqlStores from "../src/layers/SqlStores.js"
import * as EffectKind from "../src/runtime/EffectKind.js"
import * as RunDefinition from "../src/runtime/RunDefinition.js"
import * as Runtime from "../src/runtime/Runtime.js"
import * as Step from "../src/runtime/Step.js"
import { StepCtx } from "../src/runtime/StepCtx.js"
import { JournalStore } from "../src/services/JournalStore.js"
import * as PolicyEngine from "../src/services/PolicyEngine.js"
import { TimerStore } from "../src/services/TimerStore.js"
import * as Capture from "./Capture.js"
import * as Databases from "./Databases.js"
import { type Figures, measure, median } from "./Harness.js"

export type Dialect = "pg" | "sqlite"

export interface RunRow {
  readonly dialect: Dialect
  readonly concurrency: number
  readonly figures: Figures
  /** PostgreSQL only: server-counted commits per run. */
  readonly serverCommits?: number
  /** Client-counted: transactions and autocommitted statements of one run. */
  readonly transactions: number
  readonly statements: number
}

export interface ReplayPoint {
  readonly records: number
  readonly resumeMs: number
  readonly strictMs: number
}

export interface ReplayRow {
  readonly dialect: Dialect
  readonly points: ReadonlyArray<ReplayPoint>
}

/** Timer wake-ups through `Runtime.fireTimers`: `due` runs suspended on a due timer, fired by `callers` concurrent callers (instances' timer passes) until every one is sealed. */
export interface WakeRow {
  readonly dialect: Dialect
  readonly due: number
  readonly callers: number
  readonly perSec: number
  readonly seconds: number
  /**
   * Client-counted, one wake-up of one more due run (its background resume included): transactions
   * and autocommitted statements. A lone timer's pass, so its claim (one transaction) and its
   * lease upsert (one statement) are counted in full; a full batch shares both among up to 128
   * wake-ups, each of which then costs its journal read and its one commit (answer, act, seal and
   * disarm together).
   */
  readonly transactions: number
  readonly statements: number
}

/** Event → resumed-run latency: one delivery at a time, timed until the run it resumed is sealed, with `suspended` runs waiting. */
export interface LatencyRow {
  readonly dialect: Dialect
  readonly suspended: number
  readonly samples: number
  readonly p50: number
  readonly p99: number
}

export interface Results {
  readonly runs: ReadonlyArray<RunRow>
  readonly replay: ReadonlyArray<ReplayRow>
  readonly wakes: ReadonlyArray<WakeRow>
  readonly latency: ReadonlyArray<LatencyRow>
}

export const CONCURRENCY = [1, 16] as const
export const LENGTHS = [10, 100, 1000, 10_000] as const
/** Quick mode stops at 1,000 records: a live 10,000-record run takes seconds to build. */
export const QUICK_LENGTHS = [10, 100, 1000] as const

export const run = async (
  db: Databases.Throwaway,
  options: { readonly quick: boolean; readonly log: (line: string) => void },
): Promise<Results> => {
  const runs: Array<RunRow> = []
  const replay: Array<ReplayRow> = []
  const wakes: Array<WakeRow> = []
  const latency: Array<LatencyRow> = []
  for (const dialect of ["pg", "sqlite"] as const) {
    const w = await wakeRows(db, dialect, options.quick ? QUICK_DUE : DUE, options.quick, options.log)
    wakes.push(...w.wakes)
    latency.push(w.latency)
    for (const concurrency of CONCURRENCY) {
      const row = await throughput(db, dialect, concurrency, options.quick)
      options.log(
        `runtime ${dialect} c=${concurrency}: ${row.figures.perSec.toFixed(0)} runs/s, p50 ${row.figures.p50.toFixed(2)} ms, p99 ${row.figures.p99.toFixed(2)} ms, commits/run ${row.serverCommits?.toFixed(2) ?? "–"} (server), ${row.transactions} tx + ${row.statements} single (client)`,
      )
      runs.push(row)
    }
    const points = await replayGrowth(db, dialect, options.quick, options.log)
    replay.push({ dialect, points })
  }
  return { runs, replay, wakes, latency }
}

/** The wake-up rows of one backend: timer wake-ups per `due` (1 caller, and 4 on PostgreSQL up to 10,000 due), then event latency with 10,000 suspended (quick: 1,000). */
export const wakeRows = async (
  db: Databases.Throwaway,
  dialect: Dialect,
  dues: ReadonlyArray<number>,
  quick: boolean,
  log: (line: string) => void,
): Promise<{ readonly wakes: ReadonlyArray<WakeRow>; readonly latency: LatencyRow }> => {
  const wakes: Array<WakeRow> = []
  for (const due of dues) {
    // Four callers (instances sharing the queue) on pg up to 10,000 due; 100,000 takes one, so
    // the full run stays within minutes.
    for (const callers of dialect === "pg" && due <= 10_000 ? [1, 4] : [1]) {
      const row = await timerWakes(db, dialect, due, callers, log)
      log(
        `runtime ${dialect} timer wake-ups, ${count(due)} due, ${callers} caller(s): ${row.perSec.toFixed(0)}/s (${row.seconds.toFixed(1)} s), one lone wake-up ${row.transactions} tx + ${row.statements} single (claim and leases included)`,
      )
      wakes.push(row)
    }
  }
  const latency = await eventLatency(db, dialect, quick ? 1000 : 10_000, quick ? 50 : 300)
  log(
    `runtime ${dialect} event → sealed run with ${count(latency.suspended)} suspended: p50 ${latency.p50.toFixed(2)} ms, p99 ${latency.p99.toFixed(2)} ms`,
  )
  return { wakes, latency }
}

/** Due runs per wake-up row: 10,000, and 100,000 in full mode only; quick mode 1,000. */
export const DUE = [10_000, 100_000] as const
export const QUICK_DUE = [1000] as const

/** Per-record time at the largest length over that at the length before it: about 1 when linear, 10 when quadratic. */
export const linearity = (points: ReadonlyArray<ReplayPoint>, pick: (p: ReplayPoint) => number): number => {
  const last = points[points.length - 1]
  const before = points[points.length - 2]
  if (last === undefined || before === undefined) return Number.NaN
  return pick(last) / last.records / (pick(before) / before.records)
}

// internal

const twice = (name: string) =>
  EffectKind.make<number, { readonly n: number }>({
    kind: name,
    args: Schema.Struct({ n: Schema.Number }),
    success: Schema.Number,
    mutates: true,
    recovery: Run.Recovery.Retry(),
    act: ({ n }) => Effect.succeed(n + 1),
  })
const first = twice("bench.first")
const second = twice("bench.second")

/** The two-effect run every runtime row times (admit, two mutating effects, seal); the peer cell runs it too. */
export const TwoEffects = RunDefinition.make({
  capability: "bench.two_effects",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "both",
      body: (input: { readonly n: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          const a = yield* cx.perform(first, { n: input.n })
          return yield* cx.perform(second, { n: a })
        }),
    }),
  ],
})

const read = EffectKind.make<number, { readonly i: number }>({
  kind: "bench.read",
  args: Schema.Struct({ i: Schema.Number }),
  success: Schema.Number,
  mutates: false,
  act: ({ i }) => Effect.succeed(i),
})

const Long = RunDefinition.make({
  capability: "bench.long",
  input: Schema.Struct({ reads: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "reads",
      role: Step.Unnecessary,
      body: (input: { readonly reads: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          let sum = 0
          for (let i = 0; i < input.reads; i++) sum += yield* cx.perform(read, { i })
          return sum
        }),
    }),
    Step.make<{ readonly reads: number }, number, string>({
      name: "stops",
      body: () => Effect.fail("the bench stops every long run here, resumable"),
    }),
  ],
})

export type Services = Runtime.Runtime | SqlStores.Stores | SqlClient.SqlClient

const count = (n: number) => n.toLocaleString("en-US")

/** Sleeps until an instant long past, so its timer is due the moment it is armed; then seals. */
const Sleeper = RunDefinition.make({
  capability: "bench.sleeper",
  input: Schema.Struct({ n: Schema.Number }),
  output: Schema.Number,
  plan: [
    Step.make({
      name: "sleep",
      body: (input: { readonly n: number }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.sleepUntil(1)
          return input.n
        }),
    }),
  ],
})

/** Waits for `bench.ping` on its order key (a case and an obligation, as §7.6 needs); then seals. */
const Waiter = RunDefinition.make({
  capability: "bench.waiter",
  input: Schema.Struct({ order: Schema.String }),
  output: Schema.Unknown,
  plan: [
    Step.make({
      name: "wait",
      body: (input: { readonly order: string }) =>
        Effect.gen(function* () {
          const cx = yield* StepCtx
          yield* cx.deadline("ping", Deadline.days(3))
          return (yield* cx.awaitEvent({
            kind: "bench.ping",
            correlation: [CorrelationKey.make("order", input.order)],
            deadline: "ping",
          })).payload
        }),
    }),
  ],
})

/** Admits `n` runs at concurrency 16, each expected to suspend. */
const suspendMany = (
  rt: ReturnType<typeof runtimeOn>,
  tenant: TenantId,
  n: number,
  admit: (i: number) => Effect.Effect<{ readonly status: Run.RunStatus }, unknown, Services | Tenant>,
) =>
  rt.runPromise(
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) =>
        Effect.flatMap(admit(i), (r) =>
          r.status._tag === "Suspended" ? Effect.void : Effect.dieMessage(`bench run ended ${r.status._tag}`),
        ),
      { concurrency: 16, discard: true },
    ).pipe(Effect.provideService(Tenant, tenant)) as Effect.Effect<void, unknown, Services>,
  )

/**
 * `n` runs suspended on a due timer, seeded in bulk: one Sleeper admitted and driven to its
 * suspension by the runtime, then its journal written again under `n - 1` fresh run ids (each
 * record's body re-made for its run, input `{n: i}`, and re-chained) through `importRecords`,
 * 200 runs a transaction, with each run's timer armed as the suspension armed the first. The
 * effect key does not name the run, so each copy is the journal the runtime would have written:
 * the wake-up resumes and replays it like any other. Admitting 100,000 one by one took minutes.
 */
const seedSleepers = async (rt: ReturnType<typeof runtimeOn>, tenant: TenantId, n: number) => {
  const inTenant = <A>(effect: Effect.Effect<A, unknown, Services | Tenant>) =>
    rt.runPromise(Effect.provideService(effect, Tenant, tenant) as Effect.Effect<A, unknown, Services>)
  const first = await inTenant(Effect.flatMap(Runtime.Runtime, (x) => x.run(Sleeper, Run.labeled({ n: 0 }, "bench"))))
  if (first.status._tag !== "Suspended") throw new Error(`bench sleeper ended ${first.status._tag}`)
  const { records, timer } = await inTenant(
    Effect.all({
      records: Effect.flatMap(JournalStore, (j) => j.read(first.run, 1)),
      timer: Effect.flatMap(TimerStore, (t) => t.pending(1)),
    }),
  )
  const armed = timer[0]
  if (armed === undefined || armed.run !== first.run) throw new Error("the bench sleeper armed no timer")
  const CHUNK = 200
  for (let from = 1; from < n; from += CHUNK) {
    const runs = Array.from({ length: Math.min(CHUNK, n - from) }, (_, k) => ({ i: from + k, run: generateRunId() }))
    const verbatim: Array<Journal.Verbatim> = []
    for (const { i, run } of runs) {
      let prev = Digest.ZERO
      for (const r of records) {
        const kind = r.kind.kind === "RunAdmitted" ? { ...r.kind, input: { n: i } } : r.kind
        const raw = Journal.body({
          run,
          seq: r.seq,
          case: r.case,
          step: r.step,
          phase: r.phase,
          effectKey: r.effectKey,
          kind,
        })
        const hash = Digest.chain(prev, raw)
        verbatim.push({ run, seq: r.seq, prevHash: prev, hash, raw, attestation: Option.none() })
        prev = hash
      }
    }
    const [head, ...rest] = verbatim
    if (head === undefined) continue
    await inTenant(
      Effect.zipRight(
        Effect.flatMap(JournalStore, (j) => j.importRecords([head, ...rest], [])),
        Effect.flatMap(TimerStore, (t) =>
          Effect.forEach(runs, ({ run }) => t.arm(new Timer({ ...armed, run })), { concurrency: 8, discard: true }),
        ),
      ),
    )
  }
}

const timerWakes = async (
  db: Databases.Throwaway,
  dialect: Dialect,
  due: number,
  callers: number,
  log: (line: string) => void,
): Promise<WakeRow> => {
  const tenant = TenantId.make(`bench-wakes-${dialect}-${due}-${callers}`)
  const rt = runtimeOn(db, dialect, 16)
  try {
    await rt.runtime()
    const start0 = performance.now()
    await seedSleepers(rt, tenant, due)
    log(
      `runtime ${dialect}: ${count(due)} runs suspended on a due timer in ${((performance.now() - start0) / 1000).toFixed(1)} s`,
    )
    const start = performance.now()
    // Each caller plays one instance's timer pass, 128 at a time, until a pass finds none due.
    const pass: Effect.Effect<number, unknown, Services | Tenant> = Effect.flatMap(Runtime.Runtime, (x) =>
      Effect.flatMap(x.fireTimers(128), (r) =>
        r.fired + r.failed === 0 ? Effect.succeed(0) : Effect.map(pass, (n) => n + r.fired),
      ),
    )
    const fired = await rt.runPromise(
      Effect.all(
        Array.from({ length: callers }, () => pass),
        { concurrency: "unbounded" },
      ).pipe(
        Effect.tap(() => Effect.flatMap(Runtime.Runtime, (x) => x.idle)),
        Effect.map((ns) => ns.reduce((a, b) => a + b, 0)),
        Effect.provideService(Tenant, tenant),
      ) as Effect.Effect<number, unknown, Services>,
    )
    const seconds = (performance.now() - start) / 1000
    const sealed = await rt.runPromise(
      Effect.flatMap(JournalStore, (j) => j.runsByOutcome("succeeded", due + 10)).pipe(
        Effect.provideService(Tenant, tenant),
      ) as Effect.Effect<ReadonlyArray<RunId>, unknown, Services>,
    )
    if (fired !== due || sealed.length !== due) throw new Error(`fired ${fired}, sealed ${sealed.length} of ${due}`)
    await suspendMany(rt, tenant, 1, () =>
      Effect.flatMap(Runtime.Runtime, (x) => x.run(Sleeper, Run.labeled({ n: -1 }, "bench"))),
    )
    const { statements } = await rt.runPromise(
      Capture.capture(Effect.flatMap(Runtime.Runtime, (x) => Effect.zipRight(x.fireTimers(1), x.idle))).pipe(
        Effect.provideService(Tenant, tenant),
      ) as Effect.Effect<{ readonly statements: ReadonlyArray<Capture.Captured> }, unknown, Services>,
    )
    const client = {
      transactions: new Set(statements.filter((x) => x.tx !== 0).map((x) => x.tx)).size,
      statements: statements.filter((x) => x.tx === 0).length,
    }
    return { dialect, due, callers, perSec: due / seconds, seconds, ...client }
  } finally {
    await rt.dispose()
  }
}

const eventLatency = async (
  db: Databases.Throwaway,
  dialect: Dialect,
  suspended: number,
  samples: number,
): Promise<LatencyRow> => {
  const tenant = TenantId.make(`bench-latency-${dialect}-${suspended}`)
  const rt = runtimeOn(db, dialect, 16)
  const order = (i: number) => `bench-${i}`
  try {
    await rt.runtime()
    await suspendMany(rt, tenant, suspended, (i) =>
      Effect.flatMap(Runtime.Runtime, (x) =>
        x.runCorrelated(Waiter, Run.labeled({ order: order(i) }, "bench"), "order", [
          CorrelationKey.make("order", order(i)),
        ]),
      ),
    )
    const times: Array<number> = []
    for (let s = 0; s < samples; s++) {
      const i = Math.floor((s * suspended) / samples)
      const ping = new InboundEvent({
        source: "bench",
        id: `ping-${i}`,
        kind: "bench.ping",
        correlation: [CorrelationKey.make("order", order(i))],
        payload: { i },
      })
      const start = performance.now()
      await rt.runPromise(
        Effect.flatMap(Runtime.Runtime, (x) =>
          Effect.flatMap(x.deliver(ping), (d) =>
            d._tag === "Resumed" ? x.idle : Effect.dieMessage(`bench delivery was ${d._tag}`),
          ),
        ).pipe(Effect.provideService(Tenant, tenant)) as Effect.Effect<void, unknown, Services>,
      )
      times.push(performance.now() - start)
    }
    times.sort((a, b) => a - b)
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN
    return { dialect, suspended, samples, p50: at(0.5), p99: at(0.99) }
  } finally {
    await rt.dispose()
  }
}

/** The runtime with every bench definition registered, on a pool of `size` (PostgreSQL) or the bench's SQLite file. */
export const runtimeOn = (
  db: Databases.Throwaway,
  dialect: Dialect,
  size: number,
  policy: Layer.Layer<PolicyEngine.PolicyEngine> = PolicyEngine.allowAll,
) => {
  const client =
    dialect === "pg"
      ? PgBackend.layerClient({ url: db.pgUrl, maxConnections: size })
      : SqliteBackend.layerClient({ filename: db.sqliteFile })
  const stores = Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(Layer.provideMerge(client))
  const registered = Layer.mergeAll(
    RunDefinition.register(TwoEffects),
    RunDefinition.register(Long),
    RunDefinition.register(Sleeper),
    RunDefinition.register(Waiter),
  )
  // The bench times the runtime, not a policy: its runs are allowed everything by default, by choice.
  const layer = Layer.merge(Runtime.layer({ owner: `bench-${dialect}-${size}` }), registered).pipe(
    Layer.provide(policy),
    Layer.provideMerge(Layer.mergeAll(RunDefinition.layerRegistry, Calendar.layerWallClock, stores)),
  )
  return ManagedRuntime.make(layer as Layer.Layer<Services, unknown>)
}

const admitTwo = (tenant: TenantId, n: number) =>
  Effect.flatMap(Runtime.Runtime, (rt) => rt.run(TwoEffects, Run.labeled({ n }, "bench"))).pipe(
    Effect.tap((r) =>
      r.status._tag === "Succeeded" ? Effect.void : Effect.dieMessage(`bench run ended ${r.status._tag}`),
    ),
    Effect.provideService(Tenant, tenant),
  )

const throughput = async (db: Databases.Throwaway, dialect: Dialect, concurrency: number, quick: boolean) => {
  const tenant = TenantId.make(`bench-runtime-${dialect}-${concurrency}`)
  const rt = runtimeOn(db, dialect, concurrency)
  let figures: Figures
  let client: { transactions: number; statements: number }
  try {
    await rt.runtime()
    const count = quick ? 100 : 2000
    const cap = quick ? 0.3 : 3
    const call = (i: number) => rt.runPromise(admitTwo(tenant, i))
    await measure(Math.max(concurrency * 3, 20), concurrency, 0, call, cap)
    figures = await measure(count, concurrency, 1_000_000, call, cap)
    const { statements } = await rt.runPromise(Capture.capture(admitTwo(tenant, -1)))
    client = {
      transactions: new Set(statements.filter((s) => s.tx !== 0).map((s) => s.tx)).size,
      statements: statements.filter((s) => s.tx === 0).length,
    }
  } finally {
    await rt.dispose()
  }
  const serverCommits = dialect === "pg" ? await commitsPerRun(db, concurrency, quick ? 50 : 200) : undefined
  return {
    dialect,
    concurrency,
    figures,
    ...(serverCommits === undefined ? {} : { serverCommits }),
    ...client,
  } satisfies RunRow
}

/** Server commits of `runs` runs over a fresh pool, less those of the same pool's start-up and close alone. */
const commitsPerRun = async (db: Databases.Throwaway, concurrency: number, runs: number): Promise<number> => {
  const pass = async (n: number) => {
    const before = await settledCommits(db.pgName)
    const rt = runtimeOn(db, "pg", concurrency)
    try {
      await rt.runtime()
      const tenant = TenantId.make(`bench-commits-${concurrency}-${n}`)
      await measure(n, concurrency, 0, (i) => rt.runPromise(admitTwo(tenant, i)))
    } finally {
      await rt.dispose()
    }
    return (await settledCommits(db.pgName)) - before
  }
  const idle = await pass(0)
  const busy = await pass(runs)
  return (busy - idle) / runs
}

/** `xact_commit` of the database once it stops moving: read from the admin database, so the reads add none. */
export const settledCommits = async (database: string): Promise<number> => {
  const client = new pg.Client({ connectionString: Databases.ADMIN_URL })
  await client.connect()
  try {
    const once = async () =>
      Number(
        (
          await client.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1", [
            database,
          ])
        ).rows[0]?.n ?? Number.NaN,
      )
    let last = await once()
    for (let i = 0; i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      const now = await once()
      if (now === last && i >= 1) return now
      last = now
    }
    return last
  } finally {
    await client.end()
  }
}

const replayGrowth = async (
  db: Databases.Throwaway,
  dialect: Dialect,
  quick: boolean,
  log: (line: string) => void,
): Promise<ReadonlyArray<ReplayPoint>> => {
  const rt = runtimeOn(db, dialect, 1)
  const tenant = TenantId.make(`bench-replay-${dialect}`)
  const inTenant = <A, E>(effect: Effect.Effect<A, E, Services | Tenant>) =>
    rt.runPromise(Effect.provideService(effect, Tenant, tenant))
  const reps = quick ? 1 : 5
  try {
    await rt.runtime()
    const admit = (reads: number) =>
      inTenant(
        Effect.gen(function* () {
          const runtime = yield* Runtime.Runtime
          const result = yield* runtime.run(Long, Run.labeled({ reads }, "bench"))
          if (result.status._tag !== "Failed") return yield* Effect.dieMessage(`long run ended ${result.status._tag}`)
          const head = yield* Effect.flatMap(JournalStore, (j) => j.head(result.run))
          return { run: result.run, records: head.seq }
        }),
      )
    // A run's records beyond its reads' two each: admission, step boundaries, conclusion.
    const fixed = (await admit(1)).records - 2
    const points: Array<ReplayPoint> = []
    for (const length of quick ? QUICK_LENGTHS : LENGTHS) {
      const reads = Math.max(1, Math.round((length - fixed) / 2))
      const runs: Array<{ run: RunId; records: number }> = []
      for (let i = 0; i < reps + 1; i++) runs.push(await admit(reads))
      const timed = async (effect: Effect.Effect<unknown, unknown, Services | Tenant>) => {
        const start = performance.now()
        await inTenant(effect)
        return performance.now() - start
      }
      const [warm, ...rest] = runs
      if (warm === undefined) throw new Error("no run to replay")
      // One untimed pass of each, so the first timed length does not pay for JIT warm-up.
      await timed(Effect.flatMap(Runtime.Runtime, (r) => r.replay(warm.run)))
      const strict: Array<number> = []
      for (let i = 0; i < reps; i++) {
        strict.push(
          await timed(
            Effect.flatMap(Runtime.Runtime, (r) => r.replay(warm.run)).pipe(
              Effect.tap((report) =>
                report.reproduced ? Effect.void : Effect.dieMessage("a strict replay did not reproduce its journal"),
              ),
            ),
          ),
        )
      }
      const resume: Array<number> = []
      for (const r of rest) resume.push(await timed(Effect.flatMap(Runtime.Runtime, (x) => x.resume(r.run))))
      const point = { records: warm.records, resumeMs: median(resume), strictMs: median(strict) }
      log(
        `runtime ${dialect} replay of ${point.records} records: resume ${point.resumeMs.toFixed(1)} ms, strict ${point.strictMs.toFixed(1)} ms`,
      )
      points.push(point)
    }
    return points
  } finally {
    await rt.dispose()
  }
}
