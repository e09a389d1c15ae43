/**
 * MCP tool calls that did not answer (§7.14). Every error names the server and the tool, so a
 * failed step, a log line or a quarantine message says which call of which server it was.
 *
 * Three of them are answers of the call, journaled as its rejection and replayed as such
 * (`McpUnknownServer`, `McpRefused`, `McpToolFailed`); the other two say the call may be tried
 * again and differ in whether the request can have reached the server (`McpUnavailable`: surely
 * not; `McpCallLost`: perhaps), which is what recovery of a mutating tool turns on.
 */
import { Schema } from "effect"
import { Json } from "../domain/Json.js"

/** The call names a server the instance has not configured. */
export class McpUnknownServer extends Schema.TaggedError<McpUnknownServer>()("McpUnknownServer", {
  server: Schema.String,
  tool: Schema.String,
}) {
  override get message(): string {
    return `MCP server ${this.server} is not configured (tool ${this.tool})`
  }
}

/** No connection to the server could be made, so the request was never sent. */
export class McpUnavailable extends Schema.TaggedError<McpUnavailable>()("McpUnavailable", {
  server: Schema.String,
  tool: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `MCP server ${this.server} is unavailable for tool ${this.tool}: ${this.detail}`
  }
}

/** The request was sent and no answer came back (the connection closed, the server died, a timeout): it may have acted. */
export class McpCallLost extends Schema.TaggedError<McpCallLost>()("McpCallLost", {
  server: Schema.String,
  tool: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `MCP call ${this.server}/${this.tool} got no answer: ${this.detail}`
  }
}

/** The server answered the request with a protocol error (JSON-RPC `code`). */
export class McpRefused extends Schema.TaggedError<McpRefused>()("McpRefused", {
  server: Schema.String,
  tool: Schema.String,
  code: Schema.Number,
  detail: Schema.String,
}) {
  override get message(): string {
    return `MCP server ${this.server} refused tool ${this.tool} (code ${this.code}): ${this.detail}`
  }
}

/** The tool ran and answered an error result (`isError`); `content` is what it said. */
export class McpToolFailed extends Schema.TaggedError<McpToolFailed>()("McpToolFailed", {
  server: Schema.String,
  tool: Schema.String,
  content: Schema.Array(Json),
}) {
  override get message(): string {
    const text = this.content.flatMap((c) => {
      const t = typeof c === "object" && c !== null && !Array.isArray(c) ? (c as Record<string, Json>).text : undefined
      return typeof t === "string" ? [t] : []
    })
    return `MCP tool ${this.server}/${this.tool} failed${text.length > 0 ? `: ${text.join(" ")}` : ""}`
  }
}

/** What a call of `McpServers` may fail with. */
export type McpError = McpUnknownServer | McpUnavailable | McpCallLost | McpRefused | McpToolFailed

/** The rejections a journaled MCP call answers (the others are retried or recovered, §7.1). */
export const McpRejection = Schema.Union(McpUnknownServer, McpRefused, McpToolFailed)
export type McpRejection = typeof McpRejection.Type
