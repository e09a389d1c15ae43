/**
 * An MCP tool call from a step (§7.14): effect `mcp:<server>/<tool>`, performed through the step
 * context like any declared kind, so it is decided by policy (the kind is the Cedar action, the
 * arguments and the step's labels its context), announced, acted, answered and journaled, and a
 * replay (Strict, or the journaled prefix of a Resume) answers from the journal without touching
 * the server. Its answer is received untrusted, provenance `mcp:<server>/<tool>` (`Flow`).
 *
 * Decision: a helper over `cx.perform` rather than a `cx.mcp` method, so the step context keeps
 * no dependency on the MCP servers: a definition that calls a tool needs `McpServers` in its
 * context, one that does not never sees it.
 *
 * Recovery and `mutates` come from the tool's annotations as the server last listed them
 * (`ToolRecovery`), unless the call declares them. Reading them never contacts the server, so a
 * replay under an instance without that server still builds the same kind; the key of an effect
 * does not include its recovery, so the replay matches either way.
 */
import { Effect, Option, Schema } from "effect"
import { Json } from "../domain/Json.js"
import * as Run from "../domain/Run.js"
import { McpRejection, type McpRejection as Rejection } from "../errors/McpError.js"
import type { PolicyDenied } from "../errors/PolicyError.js"
import * as EffectKind from "../runtime/EffectKind.js"
import { StepCtx } from "../runtime/StepCtx.js"
import type * as Connection from "./Connection.js"
import { McpServers } from "./McpServers.js"
import * as ServerConfig from "./ServerConfig.js"
import * as ToolRecovery from "./ToolRecovery.js"

/** What a call may declare instead of the tool's annotations. */
export interface Options {
  readonly mutates?: boolean
  readonly recovery?: Run.Recovery
  /** Default: 3 attempts, 100 ms doubling, for a server that could not be reached (nothing was sent). */
  readonly retry?: Run.RetryPolicy
}

/** The journaled answer of a call: the tool's content blocks and its structured content (`null` when none). */
export const Answer = Schema.Struct({ content: Schema.Array(Json), structured: Json })

export const Arguments = Schema.Record({ key: Schema.String, value: Json })

/** The effect kind, and so the Cedar action, of a tool: `mcp:<server>/<tool>`. */
export const action = (server: string, tool: string): string => `mcp:${server}/${tool}`

/** The `_meta` member a call's idempotency key travels in: the same for every attempt of one effect. */
export const IDEMPOTENCY_META = "agentplane/idempotency-key"

/**
 * Calls `tool` of `server` with `args` as a journaled effect. A tool's error result is
 * `McpToolFailed`, a protocol error `McpRefused`, an unconfigured server `McpUnknownServer`; all
 * three are journaled answers. A server that stays unreachable exhausts the retry policy and
 * stops the run; a call lost after it was sent is recovered as its recovery says.
 */
export const call = (
  server: string,
  tool: string,
  args: Readonly<Record<string, Json>>,
  options: Options = {},
): Effect.Effect<Connection.Answer, Rejection | PolicyDenied, StepCtx | McpServers> =>
  Effect.gen(function* () {
    if (!ServerConfig.NAME.test(server) || !TOOL.test(tool)) {
      return yield* Effect.dieMessage(`MCP call ${server}/${tool}: not a server and tool name an action can carry`)
    }
    const cx = yield* StepCtx
    const servers = yield* McpServers
    return yield* cx.perform(kindOf(servers, server, tool, options), args)
  })

/** The kind of one call; its `mutates` and recovery are the declared ones, else the annotations'. */
export const kindOf = (
  servers: McpServers["Type"],
  server: string,
  tool: string,
  options: Options = {},
): EffectKind.EffectKind<Connection.Answer, Readonly<Record<string, Json>>, Rejection> => {
  const hinted = ToolRecovery.fromHints(
    Option.getOrUndefined(Option.flatMapNullable(servers.describe(server, tool), (t) => t.annotations)),
  )
  return EffectKind.make({
    kind: action(server, tool),
    args: Arguments,
    success: Answer,
    error: McpRejection,
    mutates: options.mutates ?? hinted.mutates,
    recovery: options.recovery ?? hinted.recovery,
    retry: options.retry ?? DEFAULT_RETRY,
    act: (params, attempt) =>
      servers.call(server, tool, params, { [IDEMPOTENCY_META]: attempt.idempotencyKey }).pipe(
        Effect.catchTags({
          McpUnavailable: (e) =>
            Effect.fail(new EffectKind.Transient({ message: e.message, disposition: "did_not_happen" })),
          McpCallLost: (e) => Effect.fail(new EffectKind.Transient({ message: e.message, disposition: "in_doubt" })),
        }),
      ),
  })
}

// internal

// The protocol's tool names: 1 to 128 of letters, digits, `_`, `-`, `.`.
const TOOL = /^[A-Za-z0-9_.-]{1,128}$/

const DEFAULT_RETRY = new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 100 })
