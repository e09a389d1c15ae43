/**
 * What every race property shares: how many fibers, through how small a pool, how many runs.
 */
import { Effect, FastCheck } from "effect"

/** 2–24 fibers through a fresh pool of 2–4 connections. */
export const shape = { fibers: FastCheck.integer({ min: 2, max: 24 }), pool: FastCheck.integer({ min: 2, max: 4 }) }

/** `AGENTPLANE_RACE_RUNS` runs (8 by default); shrinking stops after 40 s and reports what it has. */
export const runs = {
  fastCheck: {
    numRuns: Number(process.env.AGENTPLANE_RACE_RUNS ?? 8),
    interruptAfterTimeLimit: 40_000,
    markInterruptAsFailure: true,
  },
}

/** Runs `f(0)` … `f(n − 1)` all at once. */
export const fire = <A, E, R>(n: number, f: (i: number) => Effect.Effect<A, E, R>) =>
  Effect.all(
    Array.from({ length: n }, (_, i) => f(i)),
    { concurrency: "unbounded" },
  )
