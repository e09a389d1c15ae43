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
import { Console, Effect, Option } from "effect"
import { VERSION } from "../Version.js"
import * as Drill from "./Drill.js"
import * as EraseCase from "./EraseCase.js"
import * as Export from "./Export.js"
import * as ForgetAdmissions from "./ForgetAdmissions.js"
import * as Help from "./Help.js"
import * as Migrate from "./Migrate.js"
import * as Report from "./Report.js"
import * as Restore from "./Restore.js"
import * as SeedDemo from "./SeedDemo.js"
import * as Serve from "./Serve.js"
import * as Sweep from "./Sweep.js"
import * as TokenDigest from "./TokenDigest.js"
import * as Verify from "./Verify.js"

/** The verbs, in the order `agentplane --help` lists them. */
const verbs = [
  Serve.command,
  Sweep.command,
  Export.command,
  Verify.command,
  Restore.command,
  Drill.command,
  EraseCase.command,
  ForgetAdmissions.command,
  Migrate.command,
  TokenDigest.command,
  SeedDemo.command,
] as const

const program: Help.Program = {
  name: "agentplane",
  // package.json's version, the one the OpenAPI document states too; test/package checks that they agree.
  version: VERSION,
  description: "a durable, replayable control plane for AI agents",
}

const agentplane = Command.make(program.name).pipe(
  Command.withDescription(program.description),
  Command.withSubcommands(verbs),
)

const cli = Command.run(agentplane, { name: program.name, version: program.version })

/** Help is this module's page (see Help.ts); everything else is @effect/cli's parse and the verb. */
const main = (
  argv: ReadonlyArray<string>,
): Effect.Effect<void, Effect.Effect.Error<ReturnType<typeof cli>>, Effect.Effect.Context<ReturnType<typeof cli>>> => {
  const pages = verbs.map((verb) => Help.verb(verb))
  return Help.requested(
    argv.slice(2),
    pages.map((page) => page.name),
  ).pipe(
    Option.match({
      onNone: () => cli(argv),
      onSome: (name) => {
        const page = Option.flatMap(name, (n) => Option.fromNullable(pages.find((p) => p.name === n)))
        return Console.log(
          Option.match(page, {
            onNone: () => Help.renderProgram(program, pages),
            onSome: (verb) => Help.renderVerb(program, verb),
          }),
        )
      },
    }),
  )
}

// runMain turns the first SIGINT or SIGTERM into interruption and then drops its listeners, so a
// second signal would kill the process mid-shutdown with the store still open. Ctrl-C under
// `npm start` always sends two (the terminal signals the whole group, and npm forwards its own
// to node): once stopping, further signals are ignored. SIGKILL still forces a stop.
const ignore = () => {}
process.on("SIGINT", ignore)
process.on("SIGTERM", ignore)

// Under `npx agentplane …` (npm sets npm_command=exec) node is the child of a shell that npx's
// forwarded SIGTERM kills without passing it on, so npx exits and node would keep serving with
// init as its parent. Whoever stopped the wrapper meant to stop the command: when the parent
// goes, this process stops itself the way SIGTERM would. Only under npx, since elsewhere an
// orphan can be meant (`nohup agentplane serve &` and the shell logs out).
if (process.env.npm_command === "exec") {
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.kill(process.pid, "SIGTERM")
  }, 500)
  // Never what keeps the process alive: a verb that is done exits.
  watch.unref()
}

main(process.argv).pipe(
  Effect.tapErrorCause(Report.report),
  Report.plainInPipes,
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true }),
)
