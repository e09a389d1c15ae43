#!/usr/bin/env node
/**
 * The `agentplane` command (§8.3): `serve`, `sweep`, `migrate`, and two helpers for trying it out,
 * `token-digest` and `seed-demo`. Every flag has an `AGENTPLANE_*` environment fallback.
 *
 *   npx agentplane serve --tokens examples/demo-tokens.json --policy examples/demo-policy.json
 *
 * It runs as built JavaScript (`npm run build`, `dist/src/cli/Main.js`, the package's `bin`), so a
 * verb starts with plain node instead of paying tsx's start-up; `npx tsx src/cli/Main.ts` still
 * runs it from source in development.
 *
 * `runMain` turns SIGINT and SIGTERM into interruption, so the server stops accepting, finishes
 * what is in flight and closes the store before the process exits 0.
 */
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Migrate from "./Migrate.js"
import * as Report from "./Report.js"
import * as SeedDemo from "./SeedDemo.js"
import * as Serve from "./Serve.js"
import * as Sweep from "./Sweep.js"
import * as TokenDigest from "./TokenDigest.js"

const agentplane = Command.make("agentplane").pipe(
  Command.withDescription("a durable, replayable control plane for AI agents"),
  Command.withSubcommands([Serve.command, Sweep.command, Migrate.command, TokenDigest.command, SeedDemo.command]),
)

const cli = Command.run(agentplane, { name: "agentplane", version: "0.1.0" })

cli(process.argv).pipe(
  Effect.tapErrorCause(Report.report),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true }),
)
