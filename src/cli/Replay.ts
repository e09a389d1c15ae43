/**
 * `agentplane replay` (§7.13, §8.3): the replay gate on the command line. Replays every run of an
 * export (`--from`) in Strict mode against the definitions of `--runs` (the module `serve` takes),
 * touching no store and calling no model, tool or server, and gives each run a verdict
 * (`ReplayGate`). Standard output gets the summary as JSON; standard error a line per run that is
 * not ok, the totals, and a progress line on a terminal; `--report` a JSON Lines file with every
 * verdict and the summary last. Exit 0 every run ok or ok-open; 2 any nondeterministic, overrun or
 * unknown definition; 3 the export is damaged or incomplete; 1 nothing could be checked.
 *
 * The `--runs` module's layer is built, since a step's body may use its services; Strict replay
 * performs no act, so nothing it provides is called.
 *
 * The runs come from `--from` (a file, or `-` for standard input), or without it from `--store`
 * read in place (`ReplaySource`), or else from standard input.
 *
 * An export never decrypts (§9.2), so a sealed deployment's runs come with their payloads sealed.
 * `--store` names the store whose key ring sealed them: it is read (never written or migrated) for
 * the data keys, unwrapped with the KEK as every verb finds it (`Keys.resolve`).
 */
import { Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import { Config, Console, Context, Effect, Layer, Option, Schema } from "effect"
import * as Progress from "../archive/Progress.js"
import * as SealedStores from "../erasure/SealedStores.js"
import * as MemoryBackend from "../layers/memory/MemoryBackend.js"
import * as ReplayGate from "../runtime/ReplayGate.js"
import { KeyRing } from "../services/KeyRing.js"
import * as Definitions from "./Definitions.js"
import { exitWith, quiet, tenant, tenantId } from "./Export.js"
import * as Keys from "./Keys.js"
import * as ReplaySource from "./ReplaySource.js"

const from = Options.text("from").pipe(
  Options.withDescription(
    "the export to replay, or - for standard input (env AGENTPLANE_FROM); absent: the runs of --store, read in place, or else standard input",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_FROM")),
  Options.optional,
)

const run = Options.text("run").pipe(
  Options.withDescription("replay only this run; repeat for more (default: every run)"),
  Options.repeated,
)

const definition = Options.text("definition").pipe(
  Options.withDescription(
    "replay only runs of this definition, by its capability (env AGENTPLANE_DEFINITION; default: every definition)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_DEFINITION")),
  Options.optional,
)

const since = Options.text("since").pipe(
  Options.withDescription(
    "replay only runs admitted at or after this RFC 3339 instant, e.g. 2026-12-01T00:00:00Z (env AGENTPLANE_SINCE; default: runs of any age)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_SINCE")),
  Options.optional,
)

const report = Options.text("report").pipe(
  Options.withDescription(
    "write every verdict to this file as JSON Lines, the summary last (env AGENTPLANE_REPORT); absent: no report file",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_REPORT")),
  Options.optional,
)

const store = Options.text("store").pipe(
  Options.withDescription(
    "without --from, the store whose runs are replayed, read in place and never written or migrated; with it, the store whose key ring sealed the export's payloads. Either way sealed payloads open with its KEK (AGENTPLANE_KEK, --kek-file, or the KEK file beside a SQLite store) (env AGENTPLANE_STORE); absent: runs with sealed payloads are unreadable",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_STORE")),
  Options.optional,
)

/** How each run's sealed payloads are opened: through `store`'s key ring when it has a KEK, else not at all. */
const openerOf = (store: Option.Option<string>, keying: Keys.Keying) =>
  Effect.gen(function* () {
    if (Option.isNone(store)) return undefined
    const ring = yield* Keys.resolve(keying, store.value)
    if (Option.isNone(ring)) return undefined
    const keys = Context.get(yield* Layer.build(Keys.keyRing(store.value, ring.value)), KeyRing)
    return SealedStores.openRecords(keys)
  })

/** `--since` is not an instant. */
export class SinceInvalid extends Schema.TaggedError<SinceInvalid>()("SinceInvalid", { text: Schema.String }) {
  override get message(): string {
    return `--since ${JSON.stringify(this.text)} is not an RFC 3339 instant (e.g. 2026-12-01T00:00:00Z)`
  }
}

/** `--runs` is required: without definitions there is nothing to replay against. */
export class RunsRequired extends Schema.TaggedError<RunsRequired>()("RunsRequired", {}) {
  override get message(): string {
    return "replay needs --runs <module>: the run definitions of the build to check (the module serve takes)"
  }
}

const secondsOf = (text: string) => {
  const millis = Date.parse(text)
  return /^\d{4}-\d{2}-\d{2}T/.test(text) && Number.isFinite(millis)
    ? Effect.succeed(Math.floor(millis / 1000))
    : Effect.fail(new SinceInvalid({ text }))
}

/** One line for a person: why a run is not ok. */
const describe = (v: ReplayGate.Verdict): string => {
  switch (v.verdict) {
    case "ok":
    case "ok-open":
      return `${v.run}: ${v.verdict}`
    case "nondeterministic":
      return `${v.run} (${v.definition}): nondeterministic: ${v.detail}`
    case "overrun":
      return `${v.run} (${v.definition}): overrun: the code asks past the end of its finished journal (seq ${v.seq})`
    case "unknown-definition":
      return v.registered === null
        ? `${v.run}: unknown-definition: this build registers no ${v.definition}`
        : `${v.run}: unknown-definition: this build registers ${v.definition} version ${v.registered}, the run was admitted under ${v.version}`
    case "unreadable":
      return `${v.run ?? "line"} unreadable at line ${v.line}: ${v.detail}`
  }
}

export const command = Command.make(
  "replay",
  { from, runs: Definitions.option, run, definition, since, report, quiet, store, tenant, keying: Keys.options },
  ({ from, runs, run, definition, since, report, quiet, store, tenant, keying }) =>
    Effect.gen(function* () {
      if (Option.isNone(runs)) return yield* new RunsRequired()
      const loaded = yield* Definitions.load(runs.value)
      const sinceSecs = Option.isSome(since) ? yield* secondsOf(since.value) : undefined
      const filter: ReplayGate.Filter = {
        ...(run.length > 0 ? { runs: new Set(run) } : {}),
        ...(Option.isSome(definition) ? { definition: definition.value } : {}),
        ...(sinceSecs !== undefined ? { since: sinceSecs } : {}),
      }
      const open = yield* openerOf(store, keying)
      const fs = yield* FileSystem.FileSystem
      const file = Option.isSome(report) ? Option.some(yield* fs.open(report.value, { flag: "w" })) : Option.none()
      const encoder = new TextEncoder()
      const write = (value: unknown) =>
        Option.match(file, {
          onNone: () => Effect.void,
          onSome: (f) => f.writeAll(encoder.encode(`${JSON.stringify(value)}\n`)),
        })
      const progress = yield* Progress.onStderr("replay", quiet)
      const lines = yield* ReplaySource.lines(
        Option.getOrUndefined(from),
        Option.getOrUndefined(store),
        yield* tenantId(tenant),
      )
      const summary = yield* ReplayGate.check(lines, {
        filter,
        ...(open === undefined ? {} : { open }),
        onVerdict: (v) =>
          Effect.zipRight(
            write(v),
            v.verdict === "ok" || v.verdict === "ok-open" ? Effect.void : Console.error(`agentplane: ${describe(v)}`),
          ),
        onRecords: (n) => progress.update(n, 0),
      }).pipe(Effect.provide(ReplayGate.layerWith(loaded.register, MemoryBackend.layer)))
      yield* progress.finish
      yield* write({ summary })
      yield* Console.error(
        `agentplane: replayed ${summary.checked} run(s): ${summary.ok} ok, ${summary.ok_open} ok-open, ${summary.nondeterministic} nondeterministic, ${summary.overrun} overrun, ${summary.unknown_definition} unknown-definition, ${summary.unreadable} unreadable; ${summary.skipped} skipped by the filters${summary.incomplete === null ? "" : `; the export is incomplete: ${summary.incomplete}`}`,
      )
      yield* Console.log(JSON.stringify(summary))
      if (summary.exit !== 0) yield* exitWith(summary.exit)
    }).pipe(Effect.scoped),
).pipe(
  Command.withDescription(
    "replay an export's runs Strict against --runs' definitions, touching no store; exit 0 all ok, 2 nondeterministic/overrun/unknown definition, 3 damaged or incomplete export, 1 nothing checked",
  ),
)
