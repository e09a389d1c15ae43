/**
 * How an instance reaches one MCP server (§7.14): a child process speaking stdio, or a
 * Streamable HTTP endpoint. The name is the server's identity in effect kinds and Cedar actions
 * (`mcp:<server>/<tool>`), so it is restricted to characters that cannot split that text.
 */
import { Schema } from "effect"

/** A server name: letters, digits, `_`, `-`, `.`; no `/` or `:`, which delimit the action. */
export const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

export const ServerName = Schema.String.pipe(Schema.pattern(NAME), Schema.annotations({ identifier: "ServerName" }))

/** A server started as a child process: `command` with `args`, its environment the SDK's safe defaults plus `env`. */
export class Stdio extends Schema.TaggedClass<Stdio>()("Stdio", {
  name: ServerName,
  command: Schema.NonEmptyString,
  args: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
  cwd: Schema.optional(Schema.String),
}) {}

/** A server at a Streamable HTTP endpoint; `headers` go with every request (a bearer token). */
export class Http extends Schema.TaggedClass<Http>()("Http", {
  name: ServerName,
  url: Schema.String,
  headers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
}) {}

export const ServerConfig = Schema.Union(Stdio, Http)
export type ServerConfig = typeof ServerConfig.Type
