/**
 * How fast and how busy the machine is at a moment: the bench shares its 2 cores with whatever
 * else runs, and the same code on the same idle VM has run at rates 1.6× apart an hour apart, so
 * every report carries both readings beside its figures.
 */
import { loadavg } from "node:os"
import { performance } from "node:perf_hooks"

/**
 * Milliseconds a fixed piece of single-core work takes (integer arithmetic, then JSON in and out,
 * the kind of work a wake-up does): the machine's speed at the moment. The best of three, to skip
 * a stray pause. Lower is faster.
 */
export const speedCheck = (): number => {
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

/** The 1 / 5 / 15 minute load averages, as printed in the reports. */
export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ")
