/**
 * `serve --runs <module>`: the run definitions a server registers, and may start over
 * `POST /runs`, loaded from a module of the operator's (§8.3 leaves `serve` without any).
 *
 * A definition is code with the providers its acts call, so it cannot be configuration: the
 * module is imported at start (a `.ts` module needs the server to run under `tsx`, as `npm start`
 * does; a `.js` module loads anywhere) and its default export, or its export `runs`, is a
 * `RunsModule`: the definitions and one layer with every service their steps and acts need.
 * Every process that serves the same store should load the same module: a run is resumed by
 * whichever instance sees its wake-up first, and one without the run's capability leaves it for
 * another (the sweeper counts a wake failure).
 */
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { Options } from "@effect/cli"
import { Cause, Config, Effect, Layer, Option, Schema } from "effect"
import * as RunDefinition from "../runtime/RunDefinition.js"

/** The `--runs` module cannot serve; `message` names the module and what to change in it. */
export class RunsInvalid extends Schema.TaggedError<RunsInvalid>()("RunsInvalid", { message: Schema.String }) {}

/** What a `--runs` module exports. */
export interface RunsModule {
  /** Registered at start; each may be started by `POST /runs` naming its capability. */
  readonly definitions: ReadonlyArray<RunDefinition.Any>
  /** The services the definitions' steps and acts require (their providers); built once per process. */
  // biome-ignore lint/suspicious/noExplicitAny: a module's providers are whatever its acts need
  readonly layer?: Layer.Layer<any, unknown, never>
}

/** Types a module's export: `export default Definitions.make({ definitions: [...], layer })`. */
export const make = (module: RunsModule): RunsModule => module

/** What `serve` hands the server: the registrations and the definitions `POST /runs` may start. */
export interface Loaded {
  readonly register: Layer.Layer<never, never, RunDefinition.Registry>
  readonly startable: ReadonlyArray<RunDefinition.Any>
}

export const NONE: Loaded = { register: Layer.empty, startable: [] }

export const option = Options.file("runs", { exists: "yes" }).pipe(
  Options.withDescription(
    "a module whose default export lists the run definitions to register and their providers' layer (env AGENTPLANE_RUNS; absent: no runs, POST /runs starts none)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_RUNS")),
  Options.optional,
)

/** The shortest `--lease-ttl` that holds (`Runtime.Options.leaseTtlSecs`). */
export const MIN_LEASE_TTL = 2

/** `--lease-ttl`: how soon another instance may recover a run whose owner died (§6.4). */
export const leaseTtl = Options.integer("lease-ttl").pipe(
  Options.withDescription(
    "seconds a run's lease outlives its owner's last renewal, at least 2; another instance's sweep recovers the run after it (env AGENTPLANE_LEASE_TTL; default 30)",
  ),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_LEASE_TTL")),
  Options.optional,
)

/** The module at `path` (relative to the working directory), checked; `RunsInvalid` names what is wrong with it. */
export const load = (path: string): Effect.Effect<Loaded, RunsInvalid> =>
  Effect.gen(function* () {
    const url = pathToFileURL(resolve(path)).href
    const imported = yield* Effect.tryPromise({
      try: () => import(url) as Promise<Record<string, unknown>>,
      catch: (e) =>
        refuse(
          path,
          (e as { readonly code?: unknown }).code === "ERR_UNKNOWN_FILE_EXTENSION"
            ? "is TypeScript, which plain node cannot import: give its built .js (npm run build puts examples/refund/Serve.ts at dist/examples/refund/Serve.js) or run the server under tsx"
            : `cannot be imported: ${e instanceof Error ? e.message : String(e)}`,
        ),
    })
    const module = imported.default ?? imported.runs
    if (typeof module !== "object" || module === null) {
      return yield* refuse(path, "exports no runs: give it `export default { definitions: [...], layer }`")
    }
    const { definitions, layer } = module as Partial<RunsModule>
    if (!Array.isArray(definitions) || definitions.length === 0) {
      return yield* refuse(path, "`definitions` must be a non-empty array of RunDefinition.make(...) values")
    }
    const seen = new Set<string>()
    for (const [i, def] of definitions.entries()) {
      if (!isDefinition(def)) {
        return yield* refuse(path, `definitions[${i}] is not a RunDefinition (made by RunDefinition.make)`)
      }
      // The registry would die on the second; said here, before anything opens.
      if (seen.has(def.capability)) return yield* refuse(path, `capability ${def.capability} is listed twice`)
      seen.add(def.capability)
    }
    if (layer !== undefined && !Layer.isLayer(layer)) return yield* refuse(path, "`layer` is not an Effect Layer")
    const providers = (layer ?? Layer.empty) as Layer.Layer<never, unknown, never>
    const register = Layer.mergeAll(
      Layer.empty,
      ...definitions.map((def) => RunDefinition.register(def as RunDefinition.Any)),
    ).pipe(
      Layer.provide(providers),
      // A provider that cannot start leaves the server unable to run what it advertises.
      Layer.catchAllCause((cause) => Layer.die(new Error(`--runs ${path}: its layer failed: ${Cause.pretty(cause)}`))),
    ) as Layer.Layer<never, never, RunDefinition.Registry>
    return { register, startable: definitions as ReadonlyArray<RunDefinition.Any> }
  })

/** `--runs` when given, else none. */
export const fromOption = (path: Option.Option<string>): Effect.Effect<Loaded, RunsInvalid> =>
  Option.match(path, { onNone: () => Effect.succeed(NONE), onSome: load })

// internal

const refuse = (path: string, detail: string) => new RunsInvalid({ message: `--runs ${path}: ${detail}` })

const isDefinition = (value: unknown): value is RunDefinition.Any =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as RunDefinition.Any).capability === "string" &&
  Array.isArray((value as RunDefinition.Any).steps) &&
  typeof (value as RunDefinition.Any).finish === "function"
