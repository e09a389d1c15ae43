/**
 * How the `agentplane` command reports a failure on standard error: one line, `agentplane: `
 * and what to change. A refusal is its message alone, since the operator needs the fix, not a
 * stack; the CLI has already printed its own usage errors; a defect is a bug and keeps its full
 * cause, which whoever fixes it needs.
 */
import { ValidationError } from "@effect/cli"
import { Cause, Console, Effect } from "effect"

/** Reports `cause`; an interruption (SIGINT, SIGTERM) is a clean stop and reports nothing. */
export const report = (cause: Cause.Cause<unknown>): Effect.Effect<void> =>
  Cause.isInterruptedOnly(cause)
    ? Effect.void
    : Cause.failureOption(cause).pipe((failure) =>
        failure._tag === "Some"
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
