/**
 * `agentplane verify` (§8.3): checks an export without any store: every chain re-hashed from
 * `raw`, line order, counts against the trailer, and, when the export carries a checkpoint, its
 * leaves against the checkpoint's root and every logged run against its leaf (`LogCheck`). An
 * auditor adds `--log-verifier` (the deployment's verifier key: the checkpoint must be signed by
 * it) and `--checkpoint` (a checkpoint they kept: the export's log must extend it). Prints a JSON
 * report on standard output. Exit codes: 0 the export verifies and is complete; 2 it is damaged
 * (the report and standard error name the line, and for a record its run and seq) or it does not
 * match the log (the report lists every finding); 3 it verifies but its trailer lists runs the
 * export could not read in full; 1 it could not be checked at all (no such file, a bad flag, a
 * kept checkpoint that is not one).
 */
import { Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import { Config, Console, Data, Effect, Either, Option } from "effect"
import * as Heap from "../archive/Heap.js"
import type * as LogCheck from "../archive/LogCheck.js"
import * as Progress from "../archive/Progress.js"
import * as Verify from "../archive/Verify.js"
import * as Checkpoint from "../domain/Checkpoint.js"
import * as SignedNote from "../domain/SignedNote.js"
import { exitWith, quiet, readLines } from "./Export.js"
import * as Report from "./Report.js"

export const input = Options.text("in").pipe(
  Options.withDescription("the export to read, or - for standard input (env AGENTPLANE_IN; default -)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_IN")),
  Options.withDefault("-"),
)

const kept = Options.file("checkpoint", { exists: "yes" }).pipe(
  Options.withDescription(
    "a checkpoint you kept (its signed note, or the JSON of GET /log/checkpoint): the export's log must extend it (env AGENTPLANE_CHECKPOINT); absent: the export is held to its own checkpoint only",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_CHECKPOINT")),
  Options.optional,
)

const verifier = Options.text("log-verifier").pipe(
  Options.withDescription(
    "the deployment's verifier key <name>+<id>+<key>, as serve prints it: the export's checkpoint, and a kept one, must be signed by it (env AGENTPLANE_LOG_VERIFIER); absent: signatures are not checked",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_LOG_VERIFIER")),
  Options.optional,
)

/** What the auditor brought cannot be used: a verifier key or a kept checkpoint that is not one, or not signed by the key. */
export class TrustUnusable extends Data.TaggedError("TrustUnusable")<{ readonly message: string }> {}

/** The note a kept checkpoint file holds: the note itself, or the JSON the log's routes answer with its `note`. */
const noteIn = (text: string): string => {
  if (!text.trimStart().startsWith("{")) return text
  try {
    const note = (JSON.parse(text) as { note?: unknown }).note
    return typeof note === "string" ? note : text
  } catch {
    return text
  }
}

const trustOf = (path: Option.Option<string>, key: Option.Option<string>) =>
  Effect.gen(function* () {
    const unusable = (message: string) => new TrustUnusable({ message })
    const verifierKey = Option.isNone(key)
      ? undefined
      : yield* Either.mapLeft(SignedNote.parseVerifierKey(key.value), (e) => unusable(`--log-verifier: ${e.message}`))
    if (Option.isNone(path)) return verifierKey === undefined ? {} : { verifier: verifierKey }
    const fs = yield* FileSystem.FileSystem
    const note = noteIn(yield* fs.readFileString(path.value))
    const opened =
      verifierKey === undefined
        ? Either.flatMap(SignedNote.parse(note), (n) => Checkpoint.parse(n.text))
        : Checkpoint.open(note, [verifierKey])
    const checkpoint = yield* Either.mapLeft(opened, (e) => unusable(`--checkpoint ${path.value}: ${e.message}`))
    const trust: LogCheck.Trust =
      verifierKey === undefined ? { kept: checkpoint } : { kept: checkpoint, verifier: verifierKey }
    return trust
  })

/** The log part of a report, as JSON. */
const logJson = (log: Option.Option<LogCheck.LogReport>) =>
  Option.match(log, {
    onNone: () => null,
    onSome: (l) => ({
      origin: l.origin,
      size: l.size,
      root: l.root,
      signature: l.signature,
      unlogged: l.unlogged,
      kept: Option.getOrNull(l.kept),
    }),
  })

export const command = Command.make(
  "verify",
  { input, quiet, checkpoint: kept, verifier },
  ({ input, quiet, checkpoint, verifier }) =>
    Effect.gen(function* () {
      const trust = yield* trustOf(checkpoint, verifier)
      const lines = yield* readLines(input)
      const progress = yield* Progress.onStderr("verify", quiet)
      let records = 0
      let cases = 0
      const collect = Heap.collector()
      const verified = yield* Verify.lines(
        lines,
        (r, c) => {
          collect(r + c)
          records += r
          cases += c
          return progress.update(records, cases)
        },
        trust,
      ).pipe(
        Effect.map((v) => ({ verified: true as const, ...v, log: logJson(v.log) })),
        Effect.catchTags({
          ExportDamaged: (e) =>
            Effect.as(Console.error(Report.line(e)), {
              verified: false as const,
              line: e.line,
              run: e.run ?? null,
              seq: e.seq ?? null,
              detail: e.detail,
            }),
          CheckpointMismatch: (e) =>
            Effect.as(Console.error(Report.line(e)), {
              verified: false as const,
              error: e._tag,
              findings: e.findings,
              more: e.more,
            }),
        }),
      )
      yield* progress.finish
      yield* Console.log(JSON.stringify(verified))
      if (!verified.verified) yield* exitWith(2)
      else if (verified.unreadable.length > 0) yield* exitWith(3)
    }),
).pipe(
  Command.withDescription(
    "check an export: every chain, the trailer's counts, and its runs against its log checkpoint and a kept one; exit 0 verified, 2 damaged or not matching the log, 3 verified but incomplete, 1 not checked",
  ),
)
