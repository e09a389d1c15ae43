/**
 * `agentplane verify` (§8.3): checks an export without any store: every chain re-hashed from
 * `raw`, line order, counts against the trailer. Prints a JSON report on standard output. Exit
 * codes: 0 the export verifies and is complete; 2 it is damaged (the report and standard error
 * name the line, and for a record its run and seq); 3 it verifies but its trailer lists runs the
 * export could not read in full; 1 it could not be checked at all (no such file, a bad flag).
 * `--checkpoint` (an external checkpoint to hold the export to) waits for the transparency log.
 */
import { Command, Options } from "@effect/cli"
import { Config, Console, Effect } from "effect"
import * as Heap from "../archive/Heap.js"
import * as Progress from "../archive/Progress.js"
import * as Verify from "../archive/Verify.js"
import { exitWith, quiet, readLines } from "./Export.js"
import * as Report from "./Report.js"

export const input = Options.text("in").pipe(
  Options.withDescription("the export to read, or - for standard input (env AGENTPLANE_IN; default -)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_IN")),
  Options.withDefault("-"),
)

export const command = Command.make("verify", { input, quiet }, ({ input, quiet }) =>
  Effect.gen(function* () {
    const lines = yield* readLines(input)
    const progress = yield* Progress.onStderr("verify", quiet)
    let records = 0
    let cases = 0
    const collect = Heap.collector()
    const verified = yield* Verify.lines(lines, (r, c) => {
      collect(r + c)
      records += r
      cases += c
      return progress.update(records, cases)
    }).pipe(
      Effect.map((v) => ({ verified: true as const, ...v })),
      Effect.catchTag("ExportDamaged", (e) =>
        Effect.as(Console.error(Report.line(e)), {
          verified: false as const,
          line: e.line,
          run: e.run ?? null,
          seq: e.seq ?? null,
          detail: e.detail,
        }),
      ),
    )
    yield* progress.finish
    yield* Console.log(JSON.stringify(verified))
    if (!verified.verified) yield* exitWith(2)
    else if (verified.unreadable.length > 0) yield* exitWith(3)
  }),
).pipe(
  Command.withDescription(
    "check an export: every chain and the trailer's counts; exit 0 verified, 2 damaged, 3 verified but incomplete, 1 not checked",
  ),
)
