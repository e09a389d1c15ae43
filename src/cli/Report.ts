/**
 * How the `agentplane` command reports a failure on standard error: one line, `agentplane: `
 * and what to change. A refusal is its message alone, since the operator needs the fix, not a
 * stack; the CLI has already printed its own usage errors; a defect is a bug and keeps its full
 * cause, which whoever fixes it needs.
 */
import { ValidationError } from "@effect/cli"
import { Cause, Console, Effect } from "effect"

/** ANSI escape sequences (SGR colours and the like), as @effect/cli's printer writes them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what starts an ANSI escape
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

/** `text` without ANSI escapes. */
export const plain = (text: string): string => text.replace(ANSI, "")

/**
 * `console` with the escapes taken out of what `log` and `error` write to a stream that is not a
 * terminal: @effect/cli colours its usage errors, and in a pipe, a file or a log collector the
 * escapes are noise that a grep or an alert rule trips over.
 */
export const plainConsole = (
  console: Console.Console,
  terminal: { readonly stdout: boolean; readonly stderr: boolean },
): Console.Console => {
  const strip =
    (isTerminal: boolean) =>
    (args: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
      isTerminal ? args : args.map((arg) => (typeof arg === "string" ? plain(arg) : arg))
  const out = strip(terminal.stdout)
  const err = strip(terminal.stderr)
  return {
    ...console,
    log: (...args) => console.log(...out(args)),
    info: (...args) => console.info(...out(args)),
    error: (...args) => console.error(...err(args)),
    warn: (...args) => console.warn(...err(args)),
    unsafe: {
      ...console.unsafe,
      log: (...args) => console.unsafe.log(...out(args)),
      info: (...args) => console.unsafe.info(...out(args)),
      error: (...args) => console.unsafe.error(...err(args)),
      warn: (...args) => console.unsafe.warn(...err(args)),
    },
  }
}

/** Runs `effect` with `plainConsole` for this process's standard output and error. */
export const plainInPipes = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.consoleWith((console) =>
    Effect.withConsole(
      effect,
      plainConsole(console, { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true }),
    ),
  )

/**
 * Reports `cause`; an interruption (SIGINT, SIGTERM) is a clean stop and reports nothing. A
 * failure `declared` does not accept (one the verb does not list, `Exits.ts`) is reported as the
 * defect it is, with its whole cause.
 */
export const report = (
  cause: Cause.Cause<unknown>,
  declared: (error: unknown) => boolean = () => true,
): Effect.Effect<void> =>
  Cause.isInterruptedOnly(cause)
    ? Effect.void
    : Cause.failureOption(cause).pipe((failure) =>
        failure._tag === "Some" && declared(failure.value)
          ? ValidationError.isValidationError(failure.value)
            ? Effect.void
            : Console.error(line(failure.value))
          : Console.error(`agentplane: unexpected failure\n${Cause.pretty(cause)}`),
      )

/**
 * The line for a failure: its message on one line; failing one (a platform error can have none,
 * and a taken port once printed `agentplane: ` alone), its tag, so the line is never blank.
 */
export const line = (error: unknown): string => {
  const record = typeof error === "object" && error !== null ? (error as { message?: unknown; _tag?: unknown }) : {}
  const message = typeof record.message === "string" ? record.message.trim() : ""
  const text =
    message !== "" ? message : typeof record._tag === "string" ? `${record._tag} (no message)` : String(error)
  return `agentplane: ${text.replace(/\s*[\r\n]+\s*/g, " ")}`
}
