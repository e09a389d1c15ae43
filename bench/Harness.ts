/**
 * The timing loop: `workers` concurrent callers take operation numbers from one counter until
 * `count` have run, each call timed on its own. Throughput is operations over wall time; p50 and
 * p99 are nearest-rank percentiles of the per-call latencies.
 *
 * Decision (issue 15): the two sides are driven the way their callers drive them. The raw mirror
 * is a plain async function, so `measure` awaits it from `workers` async loops. The store is
 * called by an Effect application from inside Effect (the runtime's fibers, an HTTP handler's
 * fiber), never one `runPromise` per store call, so `measureEffect` runs `workers` fibers inside
 * ONE `runPromise` per cell: each fiber takes numbers from the same shared counter and times each
 * call with `performance.now()` read in `Effect.sync`. Timing the store through one `runPromise`
 * per call charged every operation a fiber start, a scheduler hop and a promise bridge that no
 * application pays, and that the raw side had no counterpart for. Throughput, percentiles and
 * client CPU are computed identically for both.
 */
import { performance } from "node:perf_hooks"
import { Effect } from "effect"

export interface Figures {
  readonly ops: number
  readonly seconds: number
  readonly perSec: number
  /** Milliseconds. */
  readonly p50: number
  readonly p99: number
  /** Client (this process's) CPU per operation, µs: what the Node side spends, user + system. */
  readonly cpuPerOp: number
}

/**
 * Runs operations `offset … offset + count − 1` across `workers` callers, or as many as start
 * within `capSeconds`: the cap bounds a cell's time on a slow machine, the count its fixtures.
 */
export const measure = async (
  count: number,
  workers: number,
  offset: number,
  call: (i: number, w: number) => Promise<unknown>,
  capSeconds = Number.POSITIVE_INFINITY,
): Promise<Figures> => {
  const latencies = new Float64Array(count)
  let next = 0
  const stopAt = performance.now() + capSeconds * 1000
  const worker = async (w: number) => {
    for (;;) {
      if (performance.now() > stopAt) return
      const k = next++
      if (k >= count) return
      const start = performance.now()
      await call(offset + k, w)
      latencies[k] = performance.now() - start
    }
  }
  const cpu = process.cpuUsage()
  const start = performance.now()
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)))
  const seconds = (performance.now() - start) / 1000
  const used = process.cpuUsage(cpu)
  const done = Math.min(next, count)
  const sorted = latencies.slice(0, done).sort()
  return {
    ops: done,
    seconds,
    perSec: done / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    cpuPerOp: done === 0 ? 0 : (used.user + used.system) / done,
  }
}

/**
 * The store-side loop: `workers` fibers inside one `run` (the caller's single `runPromise`), the
 * same counter, cap, latency and CPU accounting as `measure`. `call` builds operation `i` for
 * fiber `w`; a failure fails the whole cell, as a rejected raw call does.
 */
export const measureEffect = async <E, R>(
  count: number,
  workers: number,
  offset: number,
  call: (i: number, w: number) => Effect.Effect<unknown, E, R>,
  run: (effect: Effect.Effect<void, E, R>) => Promise<void>,
  capSeconds = Number.POSITIVE_INFINITY,
): Promise<Figures> => {
  const latencies = new Float64Array(count)
  let next = 0
  let done = 0
  const stopAt = performance.now() + capSeconds * 1000
  const worker = (w: number): Effect.Effect<void, E, R> =>
    Effect.gen(function* () {
      for (;;) {
        const now = yield* Effect.sync(() => performance.now())
        if (now > stopAt) return
        const k = next++
        if (k >= count) return
        yield* call(offset + k, w)
        latencies[k] = (yield* Effect.sync(() => performance.now())) - now
        done++
      }
    })
  const cpu = process.cpuUsage()
  const start = performance.now()
  await run(
    Effect.forEach(
      Array.from({ length: workers }, (_, w) => w),
      worker,
      { concurrency: "unbounded", discard: true },
    ),
  )
  const seconds = (performance.now() - start) / 1000
  const used = process.cpuUsage(cpu)
  const sorted = latencies.slice(0, done).sort()
  return {
    ops: done,
    seconds,
    perSec: done / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    cpuPerOp: done === 0 ? 0 : (used.user + used.system) / done,
  }
}

/** Median of `samples` (which it sorts): the figure growth runs report, robust to one slow pass. */
export const median = (samples: Array<number>): number => {
  samples.sort((a, b) => a - b)
  return percentile(Float64Array.from(samples), 0.5)
}

// internal

const percentile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0)
