/**
 * Real MCP servers from npm for the tests, started by the tests themselves over stdio: the
 * package's dist entry under this Node (`npx` would resolve the package anew each start, which
 * costs seconds), in a temporary folder of their own where they touch files.
 */
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import * as ServerConfig from "../../src/mcp/ServerConfig.js"

const entry = (pkg: string) => resolve("node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")

/** `@modelcontextprotocol/server-everything` over stdio, named `name`. */
export const everything = (name = "everything") =>
  new ServerConfig.Stdio({ name, command: process.execPath, args: [entry("server-everything"), "stdio"], env: {} })

/** `@modelcontextprotocol/server-filesystem` over stdio, allowed only `dir`. */
export const filesystem = (dir: string, name = "fs") =>
  new ServerConfig.Stdio({ name, command: process.execPath, args: [entry("server-filesystem"), dir], env: {} })

/** A fresh folder under the system's temporary directory, removed with the scope. */
export const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "agentplane-mcp-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true })),
)
