#!/usr/bin/env node
/**
 * The `agentplane` command (§8.3): `serve`, `sweep`, `migrate`, and two helpers for trying it out,
 * `token-digest` and `seed-demo`, and `policy`, the tools for a Cedar policy bundle (§7.12). Every
 * verb that touches a store or a server takes each flag from an `AGENTPLANE_*` variable too.
 *
 *   npx agentplane serve --tokens examples/demo-tokens.json --policy examples/demo-policy
 *
 * It runs as built JavaScript (`npm run build`, `dist/src/cli/Main.js`, the package's `bin`), so a
 * verb starts with plain node instead of paying tsx's start-up; `npx tsx src/cli/Main.ts` still
 * runs it from source in development.
 *
 * `runMain` turns SIGINT and SIGTERM into interruption, so the server stops accepting, finishes
 * what is in flight and closes the store before the process exits 0.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Option } from "effect"
import { VERSION } from "../Version.js"
import type * as Drill from "./Drill.js"
import type * as EraseCase from "./EraseCase.js"
import * as Exits from "./Exits.js"
import type * as Export from "./Export.js"
import type * as ForgetAdmissions from "./ForgetAdmissions.js"
import * as Help from "./Help.js"
import type * as Log from "./Log.js"
import type * as Migrate from "./Migrate.js"
import type * as Policy from "./Policy.js"
import type * as Replay from "./Replay.js"
import * as Report from "./Report.js"
import type * as Restore from "./Restore.js"
import type * as SeedDemo from "./SeedDemo.js"
import type * as Serve from "./Serve.js"
import type * as Sweep from "./Sweep.js"
import type * as TokenDigest from "./TokenDigest.js"
import type * as Verify from "./Verify.js"

type Verb =
  | typeof Serve.command
  | typeof Sweep.command
  | typeof Export.command
  | typeof Verify.command
  | typeof Replay.command
  | typeof Restore.command
  | typeof Drill.command
  | typeof EraseCase.command
  | typeof ForgetAdmissions.command
  | typeof Migrate.command
  | typeof TokenDigest.command
  | typeof SeedDemo.command
  | typeof Policy.command
  | typeof Log.command

/**
 * The verbs by name, in the order `agentplane --help` lists them, each loaded only when needed: a
 * verb's module graph is its memory (the HTTP stack alone holds ~40 MB), and `export` of a million
 * records must stay under 200 MB resident, so a run of one verb loads that verb alone. Help, the
 * version and anything unrecognised load them all.
 */
const loaders: ReadonlyArray<readonly [string, () => Promise<Verb>]> = [
  ["serve", () => import("./Serve.js").then((m) => m.command)],
  ["sweep", () => import("./Sweep.js").then((m) => m.command)],
  ["export", () => import("./Export.js").then((m) => m.command)],
  ["verify", () => import("./Verify.js").then((m) => m.command)],
  ["replay", () => import("./Replay.js").then((m) => m.command)],
  ["restore", () => import("./Restore.js").then((m) => m.command)],
  ["drill", () => import("./Drill.js").then((m) => m.command)],
  ["erase-case", () => import("./EraseCase.js").then((m) => m.command)],
  ["forget-admissions", () => import("./ForgetAdmissions.js").then((m) => m.command)],
  ["migrate", () => import("./Migrate.js").then((m) => m.command)],
  ["token-digest", () => import("./TokenDigest.js").then((m) => m.command)],
  ["seed-demo", () => import("./SeedDemo.js").then((m) => m.command)],
  ["policy", () => import("./Policy.js").then((m) => m.command)],
  ["log", () => import("./Log.js").then((m) => m.command)],
]

const named = loaders.filter(([name]) => name === process.argv[2])
const chosen = named.length > 0 ? named : loaders
const [first, ...rest] = await Promise.all(chosen.map(([, load]) => load()))
if (first === undefined) throw new Error("agentplane: no verbs")
const verbs: readonly [Verb, ...Array<Verb>] = [first, ...rest]
// A loader filed under the wrong name would go unnoticed (the full list still parses it), so
// every run that loads them all checks each name against its command's own.
for (const [i, verb] of verbs.entries()) {
  const name = Help.verb(verb).name
  if (name !== chosen[i]?.[0]) throw new Error(`agentplane: verb ${name} is loaded as ${chosen[i]?.[0]}`)
}

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

/** The verb this run names, if it names one; its failures are held to its table (`Exits.ts`). */
const verb = named[0]?.[0]

main(process.argv).pipe(
  Effect.tapErrorCause((cause) => Report.report(cause, (error) => Exits.isDeclared(verb, error))),
  Report.plainInPipes,
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A declared failure exits with its code, anything else as the bug it is; a verb's own code
    // on success (process.exitCode) is left alone, as runMain leaves it for 0.
    teardown: (exit, onExit) => onExit(Exits.codeOf(verb, exit)),
  }),
)
