/**
 * Progress of long work (export, verify, restore) for a person at a terminal: one line on
 * standard error, rewritten in place, with the counts so far and the rate. Silent when standard
 * error is not a terminal (a pipe, a log file, a test) or under `--quiet`, so scripts read only
 * what they asked for. The rate is the process's own measurement, read from Effect's clock.
 */
import { Clock, Effect } from "effect"

export interface Progress {
  /** The running totals; the line is rewritten at most once per `everyMs`. */
  readonly update: (records: number, cases: number) => Effect.Effect<void>
  /** Writes the final totals and ends the line; nothing when nothing was shown. */
  readonly finish: Effect.Effect<void>
}

export const silent: Progress = { update: () => Effect.void, finish: Effect.void }

export interface Options {
  readonly write: (text: string) => void
  /** Least time between two rewrites (default 250 ms). */
  readonly everyMs?: number
}

/** A progress line for `label` written through `write`. */
export const make = (label: string, options: Options): Effect.Effect<Progress> =>
  Effect.gen(function* () {
    const every = options.everyMs ?? 250
    const started = yield* Clock.currentTimeMillis
    let shownAt = Number.NEGATIVE_INFINITY
    let shown = false
    let last = { records: 0, cases: 0 }
    const render = (now: number) => {
      const secs = Math.max(now - started, 1) / 1000
      const rate = Math.round(last.records / secs)
      // `\r` and erase-line: the line is rewritten where it stands.
      options.write(`\r\x1b[2K${label}: ${last.records} records, ${last.cases} cases, ${rate} records/s`)
      shown = true
      shownAt = now
    }
    return {
      update: (records, cases) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          last = { records, cases }
          if (now - shownAt >= every) render(now)
        }),
      finish: Effect.map(Clock.currentTimeMillis, (now) => {
        if (!shown && last.records === 0 && last.cases === 0) return
        render(now)
        options.write("\n")
      }),
    }
  })

/** Progress on standard error when it is a terminal and `quiet` is off; silent otherwise. */
export const onStderr = (label: string, quiet: boolean): Effect.Effect<Progress> =>
  !quiet && process.stderr.isTTY === true
    ? make(label, { write: (text) => process.stderr.write(text) })
    : Effect.succeed(silent)
