/**
 * `npm run bench -- --log`: what the transparency log (§6.5, issue 35) costs, on SQLite and
 * PostgreSQL.
 *
 * **Seals per second, log on against off.** One seal = a run's lease taken, three notes appended
 * and `JournalStore.seal`, 16 at a time through the product's own stores. "On" seals one tenant
 * while a background fiber integrates it as `serve --log-key` does (`Integration.catchUp`, batches
 * of `Integration.BATCH`, then a pause), sharing the seals' pool or file; "off" seals another
 * tenant with no integration at all. The two interleave round by round, the side that goes first
 * alternating, and the figure is the median of the per-round ratios on/off. The on-tenant's
 * backlog (sealed less integrated) is read when each on pass ends, and at the end the log is
 * caught up and must hold every leaf the on-tenant sealed, so "on" did its work.
 *
 * **Latency at 1M leaves** (quick: 10k). A tenant's seals are written straight into `run_seal`
 * (one journal row per run, so the leaf's record count is read as the product reads it) and
 * `log_sequence`, since sealing a million runs through the stores takes from a quarter of an hour
 * (SQLite) to hours (pg) on this machine; then `LogStore.integrate` builds the tree in batches of
 * 100k. Only the reads are timed, one at a time: `checkpoint()`, `inclusionProof(run, size)` of a
 * random run at the latest size, and `consistencyProof(from, to)` of random sizes. pg is analyzed
 * after the load, as autovacuum would be; SQLite is not, as nothing analyzes it in the product.
 *
 * **The node lookup.** The proofs read their subtrees in one statement (`nodesOf`). The cell times
 * that statement in the OR-of-pairs form and in the UNION ALL form the store uses, for an
 * inclusion proof's nodes at the largest size, and keeps each dialect's plan of both.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Fiber, Option } from "effect"
import * as Integration from "../src/cli/Integration.js"
import { StepId } from "../src/domain/Ids.js"
import * as Journal from "../src/domain/Journal.js"
import * as LogKey from "../src/domain/LogKey.js"
import * as LogLeaf from "../src/domain/LogLeaf.js"
import * as MerkleNodes from "../src/domain/MerkleNodes.js"
import * as MerkleProof from "../src/domain/MerkleProof.js"
import * as SignedNote from "../src/domain/SignedNote.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import { JournalStore } from "../src/services/JournalStore.js"
import { LogStore } from "../src/services/LogStore.js"
import * as Databases from "./Databases.js"
import { type Figures, measureEffect, median } from "./Harness.js"
import { NOW, runId } from "./Op.js"

export type Dialect = "sqlite" | "pg"

export const CONCURRENCY = 16
/**
 * Milliseconds between integrations while sealing. `serve --log-every` takes whole seconds, 1 the
 * least; a pass of quick mode lasts well under that, so the bench integrates 5 times as often,
 * which can only make "on" dearer: more, smaller batches, each signing a checkpoint.
 */
export const EVERY_MS = 200
/** Leaves per integration while sealing: the server's. */
export const BATCH = Integration.BATCH
/** Leaves per integration when building the large tree. */
export const LOAD_BATCH = 100_000

export interface SealRound {
  readonly round: number
  readonly onFirst: boolean
  readonly on: Figures
  readonly off: Figures
  /** on seals/s over off seals/s. */
  readonly ratio: number
  /** The on-tenant's sealed leaves not yet integrated when its pass ended. */
  readonly backlog: number
}

export interface SealRow {
  readonly dialect: Dialect
  readonly seals: number
  readonly rounds: ReadonlyArray<SealRound>
  readonly ratio: number
  /** Leaves the background integrator hashed in during the on passes. */
  readonly integratedDuring: number
  /** Leaves the on-tenant sealed in all (warm-up included), and the log's size once caught up. */
  readonly sealed: number
  readonly finalSize: number
}

export interface Latency {
  readonly samples: number
  readonly p50: number
  readonly p99: number
}

export interface LookupForm {
  readonly ms: number
  readonly plan: string
}

export interface LatencyRow {
  readonly dialect: Dialect
  readonly leaves: number
  readonly seedSeconds: number
  readonly integrateSeconds: number
  readonly checkpoint: Latency
  readonly inclusion: Latency
  readonly consistency: Latency
  /** The nodes an inclusion proof at the latest size reads, and the lookup's two forms. */
  readonly lookupNodes: number
  readonly orChain: LookupForm
  readonly unionAll: LookupForm
}

export interface Result {
  readonly seals: ReadonlyArray<SealRow>
  readonly latency: ReadonlyArray<LatencyRow>
}

export const run = async (
  db: Databases.Throwaway,
  options: { readonly quick: boolean; readonly log: (line: string) => void },
): Promise<Result> => {
  const seals: Array<SealRow> = []
  const latency: Array<LatencyRow> = []
  for (const dialect of ["sqlite", "pg"] as const) {
    const rt = dialect === "pg" ? Databases.pgRuntime(db.pgUrl, CONCURRENCY) : Databases.sqliteRuntime(db.sqliteFile)
    try {
      await rt.runtime()
      seals.push(await sealCell(rt, dialect, options))
      latency.push(await latencyCell(rt, dialect, options))
    } finally {
      await rt.dispose()
    }
  }
  return { seals, latency }
}

// internal

type Rt = Databases.Runtime

const deploymentKey = (): LogKey.LogKey =>
  Either.getOrThrow(LogKey.make("agentplane.bench", SignedNote.signer("agentplane.bench/log", randomBytes(32))))

const on = <A, E>(rt: Rt, tenant: TenantId, effect: Effect.Effect<A, E, Databases.Services | Tenant>) =>
  rt.runPromise(Effect.provideService(effect, Tenant, tenant))

const NOTES: readonly [Journal.Append, ...ReadonlyArray<Journal.Append>] = [1, 2, 3].map(
  (n) =>
    new Journal.Append({
      case: Option.none(),
      step: StepId.make(n),
      effectKey: Option.none(),
      kind: { kind: "Note", text: `note ${n}` },
    }),
) as unknown as readonly [Journal.Append, ...ReadonlyArray<Journal.Append>]

/**
 * One whole seal: a turn of the event loop, then a fresh run leased, three notes, sealed
 * succeeded. The turn stands for the request that drives a seal in a server: SQLite's driver is
 * synchronous, so 16 workers that never wait on I/O keep the process on the microtask queue, and
 * no timer fired for a whole pass (the integrator's pause never ended: "on" integrated nothing).
 */
const sealOne = (n: number) =>
  Effect.gen(function* () {
    yield* Effect.async<void>((resume) => {
      setImmediate(() => resume(Effect.void))
    })
    const store = yield* JournalStore
    const run = runId(n)
    const lease = yield* store.acquire(run, "bench", 60)
    yield* store.append(run, lease.epoch, NOTES)
    yield* store.seal(run, lease.epoch, "succeeded")
  })

const sealCell = async (
  rt: Rt,
  dialect: Dialect,
  options: { readonly quick: boolean; readonly log: (line: string) => void },
): Promise<SealRow> => {
  // SQLite seals several times faster than pg here: its passes take more seals, so that each
  // lasts several integration periods (a pass shorter than one would see no integration at all).
  const count = dialect === "sqlite" ? (options.quick ? 1000 : 5000) : options.quick ? 300 : 2000
  const roundCount = options.quick ? 4 : 6
  const warm = options.quick ? 100 : 300
  const key = deploymentKey()
  const tenants = { on: TenantId.make("bench-log-on"), off: TenantId.make("bench-log-off") }
  // Run numbers: each pass takes a fresh block, so no two seals share a run.
  let next = 1
  let sealedOn = 0
  let integratedDuring = 0
  const pass = async (side: "on" | "off", n: number, warming = false) => {
    const offset = next
    next += n
    const integrator =
      side === "on"
        ? rt.runFork(
            Effect.provideService(
              Effect.forever(
                Effect.flatMap(Integration.catchUp(key), (done) =>
                  Effect.zipRight(
                    Effect.sync(() => {
                      integratedDuring += done.integrated
                    }),
                    Effect.sleep(`${EVERY_MS} millis`),
                  ),
                ),
              ),
              Tenant,
              tenants.on,
            ),
          )
        : undefined
    const before = integratedDuring
    try {
      const figures = await measureEffect(
        n,
        CONCURRENCY,
        offset,
        (i) => sealOne(i),
        (effect) => on(rt, tenants[side], effect),
      )
      if (figures.ops !== n) throw new Error(`log bench: ${figures.ops} of ${n} seals ran`)
      if (side === "off") return { figures, backlog: 0 }
      sealedOn += n
      const backlog = sealedOn - (await integratedSize(rt, tenants.on))
      // An on pass whose integrator hashed nothing measured sealing alone (a warm-up may be too short to).
      if (!warming && integratedDuring === before)
        throw new Error(`log bench: ${dialect} integrated nothing during an on pass`)
      return { figures, backlog }
    } finally {
      if (integrator !== undefined) await rt.runPromise(Fiber.interrupt(integrator))
    }
  }
  await pass("off", warm, true)
  await pass("on", warm, true)
  const rounds: Array<SealRound> = []
  for (let round = 1; round <= roundCount; round++) {
    const onFirst = round % 2 === 0
    const first = await pass(onFirst ? "on" : "off", count)
    const second = await pass(onFirst ? "off" : "on", count)
    const [onPass, offPass] = onFirst ? [first, second] : [second, first]
    const row = {
      round,
      onFirst,
      on: onPass.figures,
      off: offPass.figures,
      ratio: onPass.figures.perSec / offPass.figures.perSec,
      backlog: onPass.backlog,
    }
    rounds.push(row)
    options.log(
      `log ${dialect} round ${round} (${onFirst ? "on" : "off"} first): off ${row.off.perSec.toFixed(0)}/s, on ${row.on.perSec.toFixed(0)}/s (×${row.ratio.toFixed(2)}), backlog ${row.backlog}`,
    )
  }
  // Caught up: every leaf the on-tenant sealed is in the tree, and its checkpoint is signed.
  const finalSize = await on(rt, tenants.on, drain(key, BATCH))
  if (finalSize !== sealedOn) throw new Error(`log bench: ${dialect} log holds ${finalSize} of ${sealedOn} seals`)
  const checkpoint = await on(
    rt,
    tenants.on,
    Effect.flatMap(LogStore, (l) => l.checkpoint()),
  )
  if (Option.isNone(checkpoint) || checkpoint.value.size !== sealedOn)
    throw new Error(`log bench: ${dialect} checkpoint does not cover the ${sealedOn} seals`)
  return {
    dialect,
    seals: count,
    rounds,
    ratio: median(rounds.map((r) => r.ratio)),
    integratedDuring,
    sealed: sealedOn,
    finalSize,
  }
}

const integratedSize = (rt: Rt, tenant: TenantId) =>
  rt.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(sql<{ size: number | string }>`SELECT size FROM log_tree WHERE tenant = ${tenant}`, ([row]) =>
        Number(row?.size ?? 0),
      ),
    ),
  )

/** Integrates batches of `max` until one comes back short; the size it leaves. */
const drain = (key: LogKey.LogKey, max: number) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    for (;;) {
      const done = yield* log.integrate(key, NOW, max)
      if (done.leaves < max) return done.size
    }
  })

const latencyCell = async (
  rt: Rt,
  dialect: Dialect,
  options: { readonly quick: boolean; readonly log: (line: string) => void },
): Promise<LatencyRow> => {
  const leaves = options.quick ? 10_000 : 1_000_000
  const samples = options.quick ? 100 : 300
  const tenant = TenantId.make("bench-log-large")
  const key = deploymentKey()
  let t = performance.now()
  await on(rt, tenant, seed(dialect, tenant, leaves))
  const seedSeconds = (performance.now() - t) / 1000
  options.log(`log ${dialect}: ${leaves} seals written in ${seedSeconds.toFixed(1)} s`)
  t = performance.now()
  const size = await on(rt, tenant, drain(key, LOAD_BATCH))
  const integrateSeconds = (performance.now() - t) / 1000
  if (size !== leaves) throw new Error(`log bench: ${dialect} integrated ${size} of ${leaves}`)
  options.log(`log ${dialect}: ${leaves} leaves integrated in ${integrateSeconds.toFixed(1)} s`)
  if (dialect === "pg") await rt.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`ANALYZE`))

  const random = lcg(35)
  const positions = Array.from({ length: samples }, () => Math.floor(random() * size))
  const ranges = Array.from({ length: samples }, () => {
    const a = 1 + Math.floor(random() * size)
    const b = 1 + Math.floor(random() * size)
    return [Math.min(a, b), Math.max(a, b)] as const
  })
  const timed = (call: (i: number) => Effect.Effect<unknown, unknown, Databases.Services | Tenant>) =>
    measureEffect(samples, 1, 0, call, (effect) => on(rt, tenant, effect)).then(
      (f): Latency => ({ samples: f.ops, p50: f.p50, p99: f.p99 }),
    )
  const checkpoint = await timed(() => Effect.flatMap(LogStore, (l) => l.checkpoint()))
  const inclusion = await timed((i) => Effect.flatMap(LogStore, (l) => l.inclusionProof(runId(at(positions, i)), size)))
  const consistency = await timed((i) => {
    const [from, to] = ranges[i] ?? [1, size]
    return Effect.flatMap(LogStore, (l) => l.consistencyProof(from, to))
  })
  await on(rt, tenant, verifyOne(runId(at(positions, 0)), size))

  // The node lookup of an inclusion proof, in both forms, by the raw client.
  const nodes = MerkleNodes.inclusionPlan(at(positions, 0), size).nodes
  const lookups = await on(rt, tenant, lookupForms(dialect, tenant, nodes, options.quick ? 10 : 30))
  options.log(
    `log ${dialect}: checkpoint ${checkpoint.p50.toFixed(2)} ms, inclusion ${inclusion.p50.toFixed(2)} ms, consistency ${consistency.p50.toFixed(2)} ms (p50); node lookup OR ${lookups.orChain.ms.toFixed(2)} ms, UNION ALL ${lookups.unionAll.ms.toFixed(2)} ms`,
  )
  return {
    dialect,
    leaves,
    seedSeconds,
    integrateSeconds,
    checkpoint,
    inclusion,
    consistency,
    lookupNodes: nodes.length,
    ...lookups,
  }
}

const at = (xs: ReadonlyArray<number>, i: number) => xs[i] ?? 0

/** A proof the cell timed is a real one: it verifies against the latest checkpoint's root. */
const verifyOne = (run: ReturnType<typeof runId>, size: number) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const checkpoint = yield* log.checkpoint()
    if (Option.isNone(checkpoint) || checkpoint.value.size !== size) throw new Error("log bench: no checkpoint")
    const proof = yield* log.inclusionProof(run, size)
    const ok = MerkleProof.verifyInclusion(
      proof.index,
      size,
      LogLeaf.hash(proof.leaf),
      proof.proof,
      checkpoint.value.root,
    )
    if (Either.isLeft(ok)) throw new Error(`log bench: proof of ${run} does not verify: ${ok.left.detail}`)
  })

/**
 * `leaves` seals of `tenant` at positions 0 … leaves − 1, run `runId(position)`, one journal row
 * each, and the tenant's sequence at `leaves`: what that many seals leave, less the rest of each
 * journal. pg builds the rows with `generate_series`, SQLite with a recursive CTE.
 */
const seed = (dialect: Dialect, tenant: TenantId, leaves: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Never read by the log: the leaf takes its head from run_seal, its count from seq.
    const head = Buffer.alloc(32)
    yield* sql.withTransaction(
      Effect.gen(function* () {
        if (dialect === "pg") {
          yield* sql`INSERT INTO run_seal (tenant, run_id, outcome, chain_head, log_position, sealed_at)
            SELECT ${tenant}, 'run_' || lpad(i::text, 26, '0'), 'succeeded',
                   decode(md5(i::text) || md5((-i)::text), 'hex'), i, 1700000000
              FROM generate_series(0, ${leaves - 1}::bigint) AS i`
          yield* sql`INSERT INTO journal (tenant, run_id, seq, epoch, kind, prev_hash, hash, raw)
            SELECT ${tenant}, 'run_' || lpad(i::text, 26, '0'), 1, 1, 'Note', ${head}::bytea,
                   decode(md5(i::text) || md5((-i)::text), 'hex'), ${head}::bytea
              FROM generate_series(0, ${leaves - 1}::bigint) AS i`
        } else {
          yield* sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${leaves})
            INSERT INTO run_seal (tenant, run_id, outcome, chain_head, log_position, sealed_at)
            SELECT ${tenant}, 'run_' || substr('00000000000000000000000000' || i, -26), 'succeeded',
                   randomblob(32), i, 1700000000 FROM n`
          yield* sql`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${leaves})
            INSERT INTO journal (tenant, run_id, seq, epoch, kind, prev_hash, hash, raw)
            SELECT ${tenant}, 'run_' || substr('00000000000000000000000000' || i, -26), 1, 1, 'Note',
                   ${head}, randomblob(32), ${head} FROM n`
        }
        yield* sql`INSERT INTO log_sequence (tenant, size) VALUES (${tenant}, ${leaves})`
      }),
    )
  })

/** Median ms of the node lookup as an OR of (level, idx) pairs and as a UNION ALL of key probes, and each one's plan. */
const lookupForms = (dialect: Dialect, tenant: TenantId, nodes: ReadonlyArray<MerkleNodes.NodeId>, reps: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const p = dialect === "pg" ? (n: number) => `$${n}` : () => "?"
    const orText = `SELECT level, idx, hash FROM log_node WHERE tenant = ${p(1)} AND (${nodes
      .map((_, i) => `(level = ${p(2 + 2 * i)} AND idx = ${p(3 + 2 * i)})`)
      .join(" OR ")})`
    const orParams = [tenant, ...nodes.flatMap((n) => [n.level, n.index])]
    const unionText = nodes
      .map(
        (_, i) =>
          `SELECT level, idx, hash FROM log_node WHERE tenant = ${p(1 + 3 * i)} AND level = ${p(2 + 3 * i)} AND idx = ${p(3 + 3 * i)}`,
      )
      .join(" UNION ALL ")
    const unionParams = nodes.flatMap((n) => [tenant, n.level, n.index])
    const form = (text: string, params: ReadonlyArray<unknown>) =>
      Effect.gen(function* () {
        const times: Array<number> = []
        for (let r = 0; r < reps; r++) {
          const start = yield* Effect.sync(() => performance.now())
          const rows = yield* sql.unsafe(text, params as Array<unknown>)
          times.push((yield* Effect.sync(() => performance.now())) - start)
          if (rows.length !== nodes.length) throw new Error(`log bench: lookup found ${rows.length} of ${nodes.length}`)
        }
        const explain = dialect === "pg" ? `EXPLAIN ${text}` : `EXPLAIN QUERY PLAN ${text}`
        const plan = yield* sql.unsafe<Record<string, unknown>>(explain, params as Array<unknown>)
        return { ms: median(times), plan: summarize(dialect, plan) }
      })
    return { orChain: yield* form(orText, orParams), unionAll: yield* form(unionText, unionParams) }
  })

/** A plan in one line: pg's top node and the scan it makes of log_node; SQLite's distinct steps. */
const summarize = (dialect: Dialect, rows: ReadonlyArray<Record<string, unknown>>): string => {
  const lines = rows.map((r) => String(dialect === "pg" ? r["QUERY PLAN"] : r.detail).trim())
  const steps = lines
    .map((l) =>
      l
        .replace(/^->\s*/, "")
        .replace(/\s+\(cost=.*$/, "")
        .replace(/ on log_node \w+$/, " on log_node"),
    )
    // pg's conditions repeat the parameters of every term; the step names are the plan.
    .filter((l) => !/^(Recheck Cond|Index Cond|Filter):/.test(l))
  return [...new Set(steps)].join("; ")
}

/** A small deterministic generator, so every run draws the same runs and sizes. */
const lcg = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
}
