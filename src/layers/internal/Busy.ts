/**
 * Waiting for another process's SQLite write lock without blocking the event loop. SQLite's own
 * busy handler sleeps inside the call, and better-sqlite3 makes that call on the event loop; so
 * the connection's busy timeout is 0 and a busy answer is tried again here, after a timer, until
 * the configured patience has passed.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"

/** Whether `exit` is SQLite's busy answer (the write lock is another connection's). */
export const isBusy = (exit: Exit.Exit<unknown, SqlError>): boolean => {
  if (Exit.isSuccess(exit)) return false
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  const code = (failure?.cause as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" && code.startsWith("SQLITE_BUSY")
}

/** `attempt` (one synchronous try) until it is not busy or `patienceMs` has passed. */
export const retry = <A>(attempt: () => Exit.Exit<A, SqlError>, patienceMs: number): Effect.Effect<A, SqlError> =>
  Effect.flatten(retryEffect(Effect.sync(attempt), patienceMs))

/** As `retry`, for a try that is itself an effect (one that takes and gives back a lock around its call). */
export const retryEffect = <A>(
  attempt: Effect.Effect<Exit.Exit<A, SqlError>>,
  patienceMs: number,
): Effect.Effect<Exit.Exit<A, SqlError>> =>
  Effect.flatMap(attempt, (first) => {
    if (!isBusy(first)) return Effect.succeed(first)
    const deadline = Date.now() + patienceMs
    const again = (delayMs: number): Effect.Effect<Exit.Exit<A, SqlError>> =>
      Effect.flatMap(Effect.zipRight(sleep(Math.min(delayMs, Math.max(1, deadline - Date.now()))), attempt), (exit) =>
        !isBusy(exit) || Date.now() >= deadline ? Effect.succeed(exit) : again(Math.min(delayMs * 2, MAX_DELAY_MS)),
      )
    return Date.now() >= deadline ? Effect.succeed(first) : again(1)
  })

/** The next try's delay, doubling from 1 ms up to this: short enough that a freed lock is taken soon. */
export const MAX_DELAY_MS = 50

/**
 * A timer, not `Effect.sleep`: this wait is the driver's, in real time, and must pass under a
 * test's `TestClock` as it does in production (wall-clock patience, like SQLite's own handler).
 */
export const sleep = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })
