/**
 * `agentplane export` (§8.3, §9.2): the tenant's history as JSON Lines to `--out` (default
 * standard output). A file is written as `<out>.partial` and renamed when the trailer is out, so
 * an interrupted export never leaves a file that looks finished. Exit 0; 3 when the trailer
 * lists runs that could not be read in full (the export is written, and incomplete); 1 on failure.
 *
 * The options the archive verbs share live here too: `--tenant`, `--quiet` and line reading.
 */
import { Command, Options } from "@effect/cli"
// Subpath imports: a package's index loads every module it has, and export's memory is its module graph.
import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Chunk, Config, Console, Effect, Either, Stream } from "effect"
import * as Export from "../archive/Export.js"
import * as Format from "../archive/Format.js"
import * as Heap from "../archive/Heap.js"
import * as Progress from "../archive/Progress.js"
import * as Tenant from "../domain/Tenant.js"
import * as ArchiveStore from "./ArchiveStore.js"
import * as StoreFlag from "./StoreFlag.js"

export const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant (env AGENTPLANE_TENANT; default default)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault(Tenant.DEFAULT as string),
)

export const quiet = Options.boolean("quiet").pipe(
  Options.withDescription("no progress line on a terminal's standard error (env AGENTPLANE_QUIET)"),
  Options.withFallbackConfig(Config.boolean("AGENTPLANE_QUIET")),
)

/** `tenant` parsed, or its `TenantError`. */
export const tenantId = (text: string) =>
  Either.match(Tenant.parse(text), { onLeft: (e) => Effect.fail(e), onRight: Effect.succeed })

/** The lines of `path` (`-`: standard input), without line ends. */
export const readLines = (path: string) =>
  Effect.map(FileSystem.FileSystem, (fs) =>
    (path === "-" ? NodeStream.stdin : fs.stream(path)).pipe(Stream.decodeText(), Stream.splitLines),
  )

/** Exit codes a script can branch on; `runMain` leaves a successful exit's code alone. */
export const exitWith = (code: number) => Effect.sync(() => (process.exitCode = code))

/** Standard output's reader closed it (EPIPE). */
const closedPipe = (error: unknown): boolean =>
  typeof error === "object" &&
  error !== null &&
  (error as { readonly cause?: { readonly code?: unknown } }).cause?.code === "EPIPE"

const out = Options.text("out").pipe(
  Options.withDescription("file to write, or - for standard output (env AGENTPLANE_OUT; default -)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_OUT")),
  Options.withDefault("-"),
)

export const command = Command.make(
  "export",
  { store: StoreFlag.option, tenant, out, quiet, timeouts: StoreFlag.timeoutOptions },
  ({ store, tenant, out, quiet, timeouts }) =>
    Effect.gen(function* () {
      const id = yield* tenantId(tenant)
      const fs = yield* FileSystem.FileSystem
      const progress = yield* Progress.onStderr("export", quiet)
      let trailer = ""
      const collect = Heap.collector()
      const bytes = Export.lines((w) => progress.update(w.records, w.cases)).pipe(
        Stream.mapChunks((chunk) => {
          collect(chunk.length)
          const last = Chunk.last(chunk)
          // A page that ends a run exactly on its boundary reads an empty one after it: no blank line for it.
          if (last._tag === "None") return Chunk.empty<string>()
          trailer = last.value
          return Chunk.of(`${Chunk.join(chunk, "\n")}\n`)
        }),
        Stream.encodeText,
        Stream.provideService(Tenant.Tenant, id),
      )
      const partial = `${out}.partial`
      const whole = yield* Stream.run(bytes, out === "-" ? NodeSink.stdout : fs.sink(partial)).pipe(
        Effect.provide(ArchiveStore.layer(store, timeouts)),
        Effect.as(true),
        // `export | head -1`: the reader went away. Said as a shell says it (128 + SIGPIPE), not
        // as success and not as a failure of ours ("Unknown: Stream.stdout").
        Effect.catchIf(closedPipe, () => Effect.succeed(false)),
      )
      if (!whole) return yield* exitWith(141)
      if (out !== "-") yield* fs.rename(partial, out)
      yield* progress.finish
      const end = Format.parse(trailer)
      if (Either.isRight(end) && end.right._tag === "End" && end.right.end.unreadable.length > 0) {
        yield* Console.error(
          `agentplane: exported, but ${end.right.end.unreadable.length} run(s) could not be read in full; the trailer lists them`,
        )
        yield* exitWith(3)
      }
    }),
).pipe(
  Command.withDescription(
    "write the tenant's history as JSON Lines (§9.2) to --out; exit 3 when the trailer lists runs that could not be read in full",
  ),
)
