/**
 * One connection to one MCP server through the official SDK client: the transport the server's
 * configuration names, `tools/list`, `tools/call`, and close. The SDK's promises and exceptions
 * stop here: every failure leaves as an `McpError` naming the server and tool, classified by
 * whether the request can have reached the server.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, McpError as SdkMcpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import type { Json } from "../domain/Json.js"
import { McpCallLost, McpRefused, McpToolFailed, McpUnavailable } from "../errors/McpError.js"
import { VERSION } from "../Version.js"
import type * as ServerConfig from "./ServerConfig.js"
import type * as ToolRecovery from "./ToolRecovery.js"

/** One tool as `tools/list` describes it. */
export interface Tool {
  readonly name: string
  readonly description: string | undefined
  readonly inputSchema: Json
  readonly annotations: ToolRecovery.Hints | undefined
}

/** A tool's answer: its content blocks and, when it declares an output schema, its structured content. */
export interface Answer {
  readonly content: ReadonlyArray<Json>
  readonly structured: Json
}

export interface Connection {
  /** The child's process id (stdio), for health and for whoever has to stop it. */
  readonly pid: number | undefined
  /** False once the transport closed (the child exited, the session ended). */
  readonly alive: () => boolean
  /** `tools/list`, every page. */
  readonly tools: Effect.Effect<ReadonlyArray<Tool>, McpUnavailable | McpCallLost>
  /** `tools/call`; `meta` rides in the request's `_meta` (the idempotency key). */
  readonly call: (
    tool: string,
    args: Readonly<Record<string, Json>>,
    meta: Readonly<Record<string, string>>,
  ) => Effect.Effect<Answer, McpCallLost | McpRefused | McpToolFailed>
  readonly close: Effect.Effect<void>
}

/** Connects (spawning a stdio server's process) and initialises the session. */
export const connect = (config: ServerConfig.ServerConfig): Effect.Effect<Connection, McpUnavailable> =>
  Effect.gen(function* () {
    const transport = transportOf(config)
    const client = new Client({ name: "agentplane", version: VERSION })
    let alive = true
    client.onclose = () => {
      alive = false
    }
    yield* Effect.tryPromise({
      try: () => client.connect(transport),
      catch: (cause) => new McpUnavailable({ server: config.name, tool: "*", detail: describe(cause) }),
    }).pipe(Effect.tapError(() => Effect.promise(() => client.close().catch(() => undefined))))
    const server = config.name
    const lost = (tool: string) => (cause: unknown) => new McpCallLost({ server, tool, detail: describe(cause) })
    return {
      pid: transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined,
      alive: () => alive,
      tools: Effect.tryPromise({
        try: async () => {
          const all: Array<Tool> = []
          let cursor: string | undefined
          do {
            const page = await client.listTools(cursor === undefined ? {} : { cursor })
            for (const t of page.tools) {
              all.push({
                name: t.name,
                description: t.description,
                inputSchema: t.inputSchema as Json,
                annotations: t.annotations,
              })
            }
            cursor = page.nextCursor
          } while (cursor !== undefined)
          return all
        },
        catch: lost("*"),
      }),
      call: (tool, args, meta) =>
        Effect.tryPromise({
          try: () => client.callTool({ name: tool, arguments: { ...args }, _meta: { ...meta } }),
          catch: (cause) =>
            // A JSON-RPC error response is the server's answer; a closed connection or a timeout
            // is not, and the request may have acted before it was lost.
            cause instanceof SdkMcpError &&
            cause.code !== ErrorCode.ConnectionClosed &&
            cause.code !== ErrorCode.RequestTimeout
              ? new McpRefused({ server, tool, code: cause.code, detail: cause.message })
              : lost(tool)(cause),
        }).pipe(
          Effect.flatMap((result) => {
            const content = (Array.isArray(result.content) ? result.content : []) as ReadonlyArray<Json>
            if (result.isError === true) return Effect.fail(new McpToolFailed({ server, tool, content }))
            return Effect.succeed({ content, structured: (result.structuredContent ?? null) as Json })
          }),
        ),
      close: Effect.promise(() => client.close().catch(() => undefined)),
    } satisfies Connection
  })

// internal

const transportOf = (config: ServerConfig.ServerConfig): Transport => {
  switch (config._tag) {
    case "Stdio":
      return new StdioClientTransport({
        command: config.command,
        args: [...config.args],
        env: { ...getDefaultEnvironment(), ...config.env },
        // The server's diagnostics are not ours to print into the instance's own stderr.
        stderr: "ignore",
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      })
    case "Http":
      return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: { ...config.headers } } })
  }
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))
