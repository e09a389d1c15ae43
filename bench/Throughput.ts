/**
 * Throughput and latency of every store operation next to its raw ceiling: the store on a pool of
 * `c` connections against the identical statements through a bare `pg` pool of `c` (and, on pg,
 * the same statements prepared, plus any prototype the operation carries). Each cell runs as a
 * fresh tenant with its own fixtures, so no cell consumes another's.
 */
import { Effect } from "effect"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import type { Services } from "./Databases.js"
import * as Databases from "./Databases.js"
import { type Figures, measure, measureEffect } from "./Harness.js"
import * as Mirror from "./Mirror.js"
import type { Instance, Op } from "./Op.js"
import { ALL } from "./ops/All.js"
import * as Raw from "./Raw.js"

export interface Row {
  readonly op: string
  readonly dialect: "pg" | "sqlite"
  readonly concurrency: number
  readonly store: Figures
  readonly raw: Figures
  /** pg only: the raw statements as named (prepared) statements. */
  readonly prepared?: Figures
  /** Prototypes of a faster store path (a writable CTE …), each on the raw driver. */
  readonly prototypes: ReadonlyArray<{ readonly name: string; readonly figures: Figures }>
}

export interface Options {
  readonly quick: boolean
  readonly log: (line: string) => void
}

export const PG_CONCURRENCY = [1, 4, 16] as const

/** A cell stops starting operations after this long, whatever its count: it bounds a slow machine's run. */
const CAP_SECONDS = 2
const QUICK_CAP_SECONDS = 0.15

export const run = async (db: Databases.Throwaway, options: Options): Promise<ReadonlyArray<Row>> => {
  const rows: Array<Row> = []
  for (const concurrency of PG_CONCURRENCY) rows.push(...(await backend(db, "pg", concurrency, options)))
  rows.push(...(await backend(db, "sqlite", 1, options)))
  return rows
}

// internal

const backend = async (
  db: Databases.Throwaway,
  dialect: "pg" | "sqlite",
  concurrency: number,
  options: Options,
): Promise<ReadonlyArray<Row>> => {
  const runtime = dialect === "pg" ? Databases.pgRuntime(db.pgUrl, concurrency) : Databases.sqliteRuntime(db.sqliteFile)
  const raw = dialect === "pg" ? Raw.pgRaw({ url: db.pgUrl, size: concurrency }) : Raw.sqliteRaw(db.sqliteFile)
  const prepared = dialect === "pg" ? Raw.pgRaw({ url: db.pgUrl, size: concurrency, prepared: true }) : undefined
  try {
    await runtime.runtime()
    const rows: Array<Row> = []
    for (const [index, op] of ALL.entries()) {
      // The mirror is checked on every backend before it is timed: a stale one measures nothing.
      const stale = await Mirror.check(op, runtime, raw, `mirror-${dialect}-${concurrency}-${index}`)
      if (stale !== undefined) throw new Error(Mirror.describe(stale))
      const cell = (variant: string) => `b-${dialect}-${concurrency}-${index}-${variant}`
      const figures = (variant: string, call: (inst: Instance) => (i: number, w: number) => Promise<unknown>) =>
        timeCell(op, cell(variant), concurrency, options.quick, raw, (inst) => {
          const f = call(inst)
          return (count, offset, cap) => measure(count, concurrency, offset, f, cap)
        })
      // The store side: `concurrency` fibers inside one runPromise per pass (Harness's decision).
      const effectFigures = (
        variant: string,
        call: (inst: Instance) => (i: number, w: number) => Effect.Effect<void, unknown, Services | Tenant>,
      ) =>
        timeCell(op, cell(variant), concurrency, options.quick, raw, (inst) => {
          const f = call(inst)
          const tenant = TenantId.make(cell(variant))
          return (count, offset, cap) =>
            measureEffect(
              count,
              concurrency,
              offset,
              f,
              (effect) => runtime.runPromise(Effect.provideService(effect, Tenant, tenant)),
              cap,
            )
        })
      const rawFigures = await figures("raw", (inst) => (i, w) => inst.raw(raw, i, w))
      const storeFigures = await effectFigures("store", (inst) => inst.store)
      const preparedFigures =
        prepared === undefined ? undefined : await figures("prepared", (inst) => (i, w) => inst.raw(prepared, i, w))
      const prototypes: Array<{ name: string; figures: Figures }> = []
      if (dialect === "pg") {
        for (const proto of op.make({ tenant: "", count: 0, workers: 1 }).prototypes ?? []) {
          const viaPrepared = prepared ?? raw
          prototypes.push({
            name: proto.name,
            figures: await figures(`proto-${proto.name}`, (inst) => {
              const mine = inst.prototypes?.find((p) => p.name === proto.name)
              if (mine === undefined) throw new Error(`prototype ${proto.name} vanished`)
              return (i, w) => mine.run(proto.prepared === true ? viaPrepared : raw, i, w)
            }),
          })
          if (proto.store === undefined) continue
          prototypes.push({
            name: `${proto.name} via SqlClient`,
            figures: await effectFigures(`proto-effect-${proto.name}`, (inst) => {
              const mine = inst.prototypes?.find((p) => p.name === proto.name)?.store
              if (mine === undefined) throw new Error(`prototype ${proto.name} vanished`)
              return mine
            }),
          })
        }
      }
      const row: Row = {
        op: op.name,
        dialect,
        concurrency,
        store: storeFigures,
        raw: rawFigures,
        ...(preparedFigures === undefined ? {} : { prepared: preparedFigures }),
        prototypes,
      }
      options.log(
        `${dialect} c=${concurrency} ${op.name}: store ${storeFigures.perSec.toFixed(0)}/s, raw ${rawFigures.perSec.toFixed(0)}/s, ratio ${(storeFigures.perSec / rawFigures.perSec).toFixed(2)}${prototypes.map((p) => `, ${p.name} ${p.figures.perSec.toFixed(0)}/s`).join("")}`,
      )
      rows.push(row)
    }
    return rows
  } finally {
    await raw.close()
    await prepared?.close()
    await runtime.dispose()
  }
}

/** Seeds a fresh tenant for warm-up plus timed operations, warms the pool, then times the rest. */
const timeCell = async (
  op: Op,
  tenant: string,
  workers: number,
  quick: boolean,
  seeder: Raw.Raw,
  timer: (inst: Instance) => (count: number, offset: number, cap: number) => Promise<Figures>,
): Promise<Figures> => {
  const count = quick ? Math.max(40, Math.round(op.ops / 25)) : op.ops
  // Enough to open every connection of the pool and settle the JIT before the clock starts.
  const warm = Math.max(workers * 3, Math.round(count / 10))
  const inst = op.make({ tenant, count: warm + count, workers })
  await inst.seed(seeder)
  const time = timer(inst)
  const cap = quick ? QUICK_CAP_SECONDS : CAP_SECONDS
  await time(warm, 0, cap)
  return time(count, warm, cap)
}
