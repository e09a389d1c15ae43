/**
 * The `agentplane` command (§8.3): `serve`, `migrate`, and two helpers for trying it out,
 * `token-digest` and `seed-demo`. Every flag has an `AGENTPLANE_*` environment fallback.
 *
 *   npx tsx src/cli/Main.ts serve --tokens examples/demo-tokens.json --policy examples/demo-policy.json
 *
 * `runMain` turns SIGINT and SIGTERM into interruption, so the server stops accepting, finishes
 * what is in flight and closes the store before the process exits 0.
 */
import { Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Console, Effect } from "effect"
import * as Migrate from "./Migrate.js"
import * as SeedDemo from "./SeedDemo.js"
import * as Serve from "./Serve.js"
import * as TokenDigest from "./TokenDigest.js"

const agentplane = Command.make("agentplane").pipe(
  Command.withDescription("a durable, replayable control plane for AI agents"),
  Command.withSubcommands([Serve.command, Migrate.command, TokenDigest.command, SeedDemo.command]),
)

const cli = Command.run(agentplane, { name: "agentplane", version: "0.1.0" })

/**
 * A refusal is reported as its message alone: the operator needs to know what to change, not a
 * stack. The CLI has already printed its own usage errors; defects keep their full cause.
 */
const report = (cause: Cause.Cause<unknown>) =>
  Cause.isInterruptedOnly(cause)
    ? Effect.void
    : Cause.failureOption(cause).pipe((failure) =>
        failure._tag === "Some"
          ? ValidationError.isValidationError(failure.value)
            ? Effect.void
            : Console.error(`agentplane: ${messageOf(failure.value)}`)
          : Console.error(`agentplane: unexpected failure\n${Cause.pretty(cause)}`),
      )

/** The error's message; failing one (a platform error can have none), its tag, so the line is never blank. */
const messageOf = (error: unknown): string => {
  const record = typeof error === "object" && error !== null ? (error as { message?: unknown; _tag?: unknown }) : {}
  const message = typeof record.message === "string" ? record.message : ""
  if (message !== "") return message
  return typeof record._tag === "string" ? `${record._tag} (no message)` : String(error)
}

cli(process.argv).pipe(
  Effect.tapErrorCause(report),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true }),
)
