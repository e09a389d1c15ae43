/**
 * `agentplane serve`: the operator HTTP API (§8.1, §8.3). Refuses to start without a credential
 * table and a policy, with either malformed, with a policy naming a role no credential holds, on
 * a store `StoreFlag.check` refuses or on an address it cannot bind; only then migrates the store,
 * and serves until SIGINT or SIGTERM, when the server stops accepting, in-flight requests finish
 * and the store closes.
 */
import { Command, Options } from "@effect/cli"
import type { FileSystem } from "@effect/platform"
import { HttpServer, HttpServerError } from "@effect/platform"
import { Config, Console, Effect, Either, Layer, Option, Schema } from "effect"
import * as Digest from "../domain/Digest.js"
import * as SignedNote from "../domain/SignedNote.js"
import * as CedarAuthorizer from "../http/CedarAuthorizer.js"
import * as CedarTranslation from "../http/CedarTranslation.js"
import * as Credentials from "../http/Credentials.js"
import * as JsonPolicy from "../http/JsonPolicy.js"
import * as Readiness from "../http/Readiness.js"
import * as RequestLog from "../http/RequestLog.js"
import * as RouteBundle from "../http/RouteBundle.js"
import * as Server from "../http/Server.js"
import * as PolicyEngineCedar from "../layers/PolicyEngineCedar.js"
import * as Bundle from "../policy/Bundle.js"
import * as Roles from "../policy/Roles.js"
import * as Sweeper from "../runtime/Sweeper.js"
import { PolicyEngine } from "../services/PolicyEngine.js"
import * as Address from "./Address.js"
import * as Definitions from "./Definitions.js"
import * as Integration from "./Integration.js"
import * as Keys from "./Keys.js"
import * as LogKeyFile from "./LogKeyFile.js"
import * as StoreFlag from "./StoreFlag.js"
import * as Sweep from "./Sweep.js"

/** `serve` cannot start as configured; `message` says what to change. */
export class StartRefused extends Schema.TaggedError<StartRefused>()("StartRefused", { message: Schema.String }) {}

const addr = Options.text("addr").pipe(
  Options.withDescription(`host:port to listen on (env AGENTPLANE_ADDR); default ${Address.DEFAULT}`),
  Options.withFallbackConfig(Config.string("AGENTPLANE_ADDR")),
  Options.withDefault(Address.DEFAULT),
)

const tokens = Options.text("tokens").pipe(
  Options.withDescription(
    "required: the credential table, a JSON array of {digest, tenant, actor, roles} (env AGENTPLANE_TOKENS; or the JSON itself in AGENTPLANE_TOKENS_JSON)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TOKENS")),
  Options.optional,
)

const policy = Options.text("policy").pipe(
  Options.withDescription(
    "required: the policy, a Cedar bundle: a directory of *.cedar policies (and *.cedarschema declarations), or one *.cedar file (env AGENTPLANE_POLICY); a JSON allow list is refused, showing its Cedar equivalent",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_POLICY")),
  Options.optional,
)

const logLevel = Options.choice("log-level", RequestLog.Level.literals).pipe(
  Options.withDescription(
    "lowest level of the JSON log lines written to standard output (env AGENTPLANE_LOG_LEVEL; default info)",
  ),
  Options.withFallbackConfig(Config.literal(...RequestLog.Level.literals)("AGENTPLANE_LOG_LEVEL")),
  Options.withDefault(RequestLog.DEFAULT_LEVEL),
)

const metricsTokenDigest = Options.text("metrics-token-digest").pipe(
  Options.withDescription(
    "SHA-256 digest (`agentplane token-digest`) of the operator's scrape token, the only credential /metrics takes; several comma-separated (env AGENTPLANE_METRICS_TOKEN_DIGEST; absent: nobody may scrape)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_METRICS_TOKEN_DIGEST")),
  Options.optional,
)

const docsCredential = Options.boolean("docs-credential").pipe(
  Options.withDescription(
    "/docs and /openapi.json need a bearer credential of the table (env AGENTPLANE_DOCS_CREDENTIAL); default off: public, as they show the API's shape and no tenant's data",
  ),
  Options.withFallbackConfig(Config.boolean("AGENTPLANE_DOCS_CREDENTIAL")),
)

const noConsole = Options.boolean("no-console").pipe(
  Options.withDescription(
    "do not serve the console at /console (env AGENTPLANE_NO_CONSOLE); default: served, a client of this API that takes the caller's bearer token",
  ),
  Options.withFallbackConfig(Config.boolean("AGENTPLANE_NO_CONSOLE")),
)

const noKek = Options.boolean("no-kek").pipe(
  Options.withDescription(
    "serve with no key ring: write no KEK file beside a fresh SQLite store and read none, so payloads are stored in the clear where no erasure can reach them; a store already sealed is refused (env AGENTPLANE_NO_KEK); default: a fresh SQLite store gets <store>.kek (mode 0600) and payloads are sealed",
  ),
  Options.withFallbackConfig(Config.boolean("AGENTPLANE_NO_KEK")),
)

const sweepEvery = Options.integer("sweep-every").pipe(
  Options.withDescription(
    "sweep every tenant of the credential table every <secs> seconds (env AGENTPLANE_SWEEP_EVERY); default 0: sweeping is scheduled outside, e.g. `agentplane sweep` from cron",
  ),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_SWEEP_EVERY")),
  Options.withDefault(0),
)

const logEvery = Options.integer("log-every").pipe(
  Options.withDescription(
    "with --log-key, integrate every tenant's sealed runs into its transparency log and sign a checkpoint every <secs> seconds (env AGENTPLANE_LOG_EVERY); default 5",
  ),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_LOG_EVERY")),
  Options.withDefault(5),
)

export interface ServeOptions {
  readonly addr: string
  readonly store: string
  readonly tokens: Option.Option<string>
  readonly policy: Option.Option<string>
  /** Seconds between sweeps of every tenant; 0: no sweeping in this process. */
  readonly sweepEvery?: number
  readonly eventGrace?: number
  readonly metricTenant?: boolean
  /** `--docs-credential`: `/docs` and `/openapi.json` need a credential (`Docs.ts`). */
  readonly docsCredential?: boolean
  /** `--no-console`: do not serve the console (`Console.ts`); default served. */
  readonly noConsole?: boolean
  readonly timeouts?: StoreFlag.Timeouts
  /** `--runs`: the module of run definitions to register and start (`Definitions.ts`). */
  readonly runs?: Option.Option<string>
  /** `--lease-ttl`: the runtime's lease TTL in seconds; absent, the runtime's default. */
  readonly leaseTtl?: Option.Option<number>
  /** `--log-level`; default `info`. */
  readonly logLevel?: RequestLog.Level
  /** `--metrics-token-digest`: comma-separated digests of the scrape tokens; absent, nobody may scrape. */
  readonly metricsTokenDigest?: Option.Option<string>
  /** `--keys` and `--kek-file` (`Keys.ts`): with a KEK, payloads are sealed at rest. */
  readonly keying?: Keys.Keying
  /** `--no-kek`: a fresh SQLite store gets no KEK file (`Keys.outOfTheBox`); default it does. */
  readonly noKek?: boolean
  /** `--log-key` and `--log-name` (`LogKeyFile`): with a key, the transparency log is integrated and signed. */
  readonly log?: LogKeyFile.Flags
  /** `--log-every`: seconds between integrations; default 5. */
  readonly logEvery?: number
}

/**
 * The routes' policy: the Cedar bundle `--policy` names (`Bundle.read`: a directory of `*.cedar` and
 * `*.cedarschema` files, or one `*.cedar` file), validated against the schema, as the engine
 * `CedarAuthorizer` asks. A bundle that cannot be read or does not validate refuses the start
 * with every problem the validator named. A JSON allow list (a `.json` path, or the JSON itself
 * in `AGENTPLANE_POLICY_JSON`) is the older form: refused, showing its Cedar equivalent, so the
 * operator can paste it into a bundle instead of guessing how one reads in the other.
 */
const routeBundle = (
  file: Option.Option<string>,
): Effect.Effect<PolicyEngineCedar.Loaded, StartRefused, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const inline = yield* Config.option(Config.string(POLICY_JSON)).pipe(
      Effect.mapError((e) => new StartRefused({ message: `${POLICY_JSON}: ${e.message}` })),
    )
    if (Option.isSome(inline)) return yield* refuseJson(JsonPolicy.parse(inline.value, POLICY_JSON), "")
    if (Option.isNone(file)) {
      return yield* new StartRefused({
        message:
          "serve needs a policy (without one every request would be refused): --policy <bundle> (or AGENTPLANE_POLICY=<bundle>), a directory of *.cedar files or one *.cedar file",
      })
    }
    const path = file.value
    if (path.endsWith(".json")) {
      return yield* refuseJson(
        yield* Effect.either(JsonPolicy.fromFile(path)),
        `; agentplane policy translate ${path} prints it too`,
      )
    }
    return yield* Bundle.read(path).pipe(
      Effect.flatMap(PolicyEngineCedar.load),
      Effect.mapError((e) => new StartRefused({ message: `policy ${path}: ${e.message}` })),
    )
  })

const POLICY_JSON = "AGENTPLANE_POLICY_JSON"

/**
 * The refusal of a JSON allow list: its Cedar translation when it reads as one (`hint` says how
 * else to get the text), else why it does not, since a file that cannot be read cannot be
 * translated and the operator still needs to know serve takes a bundle. The translation has no
 * comment in it, so the one line the CLI prints (`Report.line`) is still Cedar to paste.
 */
const refuseJson = (policy: Either.Either<JsonPolicy.Policy, JsonPolicy.PolicyInvalid>, hint: string) =>
  Either.match(policy, {
    onLeft: (e) =>
      new StartRefused({
        message: `${e.message}; besides, serve takes a Cedar bundle (a directory of *.cedar files, or one *.cedar file), not a JSON allow list`,
      }),
    onRight: (p) =>
      new StartRefused({
        message: `policy ${p.source}: serve takes a Cedar bundle (a directory of *.cedar files, or one *.cedar file), not a JSON allow list; this Cedar decides every route as the JSON did (save it as routes.cedar and give --policy routes.cedar${hint}): ${CedarTranslation.policies(p)}`,
      }),
  })

/**
 * One of a file (flag or `AGENTPLANE_X`) and inline JSON (`AGENTPLANE_X_JSON`), exactly: neither
 * leaves the server without its table, both leave it unclear which one governs.
 */
const source = <A, E, R>(
  what: string,
  flag: string,
  file: Option.Option<string>,
  fromFile: (path: string) => Effect.Effect<A, E, R>,
  fromJson: (json: string, source: string) => Effect.Effect<A, E, R>,
): Effect.Effect<A, E | StartRefused, R> =>
  Effect.gen(function* () {
    const variable = `AGENTPLANE_${flag.toUpperCase()}_JSON`
    const json = yield* Config.option(Config.string(variable)).pipe(
      Effect.mapError((e) => new StartRefused({ message: `${variable}: ${e.message}` })),
    )
    if (Option.isSome(file) && Option.isSome(json)) {
      return yield* new StartRefused({
        message: `${what} given twice: --${flag} (or AGENTPLANE_${flag.toUpperCase()}) and ${variable}; give one`,
      })
    }
    if (Option.isSome(file)) return yield* fromFile(file.value)
    if (Option.isSome(json)) return yield* fromJson(json.value, variable)
    return yield* new StartRefused({
      message: `serve needs ${what}: --${flag} <file> (or AGENTPLANE_${flag.toUpperCase()}=<file>, ${variable}=<json>)`,
    })
  })

/**
 * The whole server for `options`, as a layer that serves while it is held. Everything that can
 * refuse the start is checked here, before the layer opens the store: a refused start migrates
 * nothing and creates no database file.
 */
export const layer = (options: ServeOptions) => Effect.map(build(options), (built) => built.layer)

/** `layer`, and how payloads are kept, as the startup line says it. */
const build = (options: ServeOptions) =>
  Effect.gen(function* () {
    const address = yield* Effect.mapError(Address.parse(options.addr), (message) => new StartRefused({ message }))
    const store = yield* StoreFlag.check(options.store)
    const credentials = yield* source(
      "a credential table",
      "tokens",
      options.tokens,
      Credentials.fromFile,
      Credentials.fromJson,
    )
    const loaded = yield* routeBundle(options.policy)
    // Only here are both tables at hand: a role the bundle names is checked against the credentials.
    const unheld = Roles.unheld(loaded.bundle, credentials.roles)
    if (unheld !== undefined) {
      return yield* new StartRefused({
        message: `policy ${loaded.bundle.source}: policy ${JSON.stringify(unheld.policy)} names role ${JSON.stringify(unheld.role)}, which no credential holds (held: ${credentials.roles.join(", ")})`,
      })
    }
    // The authoriser, what `GET /policy` shows and the engine the runs' effects are decided by
    // (§7.12) come from one load, so they cannot disagree: one policy for the API and the runs.
    const runPolicy = Layer.succeed(PolicyEngine, PolicyEngineCedar.engine(loaded))
    const authorizer = Layer.merge(
      CedarAuthorizer.layer.pipe(Layer.provide(runPolicy)),
      Layer.succeed(RouteBundle.RouteBundle, RouteBundle.identity(loaded.bundle, loaded.policies.values())),
    )
    const every = options.sweepEvery ?? 0
    if (every < 0 || (options.eventGrace ?? 0) < 0) {
      return yield* new StartRefused({ message: "--sweep-every and --event-grace take a number of seconds, 0 or more" })
    }
    const logEvery = options.logEvery ?? 5
    if (logEvery < 1) return yield* new StartRefused({ message: "--log-every takes a number of seconds, 1 or more" })
    const logKey = yield* LogKeyFile.load(options.log ?? { logKey: Option.none(), logName: LogKeyFile.DEFAULT_NAME })
    const leaseTtlSecs = Option.getOrUndefined(options.leaseTtl ?? Option.none())
    // The runtime renews a lease every third of its TTL, in whole seconds: at 1 a renewal lands on
    // the expiry and a live owner loses its runs (Runtime.Options.leaseTtlSecs).
    if (leaseTtlSecs !== undefined && leaseTtlSecs < Definitions.MIN_LEASE_TTL) {
      return yield* new StartRefused({
        message: `--lease-ttl (AGENTPLANE_LEASE_TTL) ${leaseTtlSecs}: a lease lasts at least ${Definitions.MIN_LEASE_TTL} whole seconds, the shortest a live owner keeps`,
      })
    }
    // The definitions are code with the providers their acts call, so they come from a module
    // (`--runs`), loaded before anything opens. Without one the server registers none: a
    // delivery that answers a run whose capability is not registered leaves the event claimed
    // for it (`buffered`) for a process that registers it, and the sweeper's wake of such a run
    // counts as a wake failure.
    const runs = yield* Definitions.fromOption(options.runs ?? Option.none())
    const scrapeDigests = yield* parseDigests(options.metricsTokenDigest ?? Option.none())
    // A bad or missing KEK refuses the start before the store opens; the store's sealing mark is
    // checked when the store layer is built, before the listener binds.
    const keying = options.keying ?? Keys.NONE
    if (options.noKek === true && Option.isSome(keying.kekFile)) {
      return yield* new StartRefused({
        message: "--no-kek and --kek-file (or AGENTPLANE_KEK_FILE) both given; give one",
      })
    }
    const configured = options.noKek === true ? yield* keysWithoutKek(keying) : yield* Keys.resolve(keying, store)
    yield* Address.probe(address)
    // Out of the box a fresh SQLite store is sealed, so `erase-case` can keep its word; written
    // only now, after every check that could refuse the start.
    const ring = options.noKek === true ? configured : yield* Keys.outOfTheBox(store, configured, keying.keys)
    const server = Server.layer({
      ...address,
      definitions: runs.register,
      startable: runs.startable,
      ...(leaseTtlSecs === undefined ? {} : { runtime: { leaseTtlSecs } }),
      // The probe opens its own connection to the same store (`Readiness.ts`).
      readiness: StoreFlag.isPostgres(store) ? Readiness.layerPg(store) : Readiness.layerSqlite(store),
      scrapeDigests,
      metricTenant: options.metricTenant ?? false,
      docs: { credential: options.docsCredential ?? false },
      console: options.noConsole !== true,
      ...Option.match(logKey, { onNone: () => ({}), onSome: (k) => ({ logKey: k }) }),
    }).pipe(
      Layer.provide(Layer.mergeAll(Layer.succeed(Credentials.Credentials, credentials), authorizer, runPolicy)),
      Layer.provideMerge(Keys.stores(store, options.timeouts ?? StoreFlag.NO_TIMEOUTS, ring)),
    )
    // The sweeping fiber lives in the layer's scope: on shutdown it is interrupted first, before
    // the server, the runtime and the store close.
    const sweeping =
      every === 0
        ? Layer.empty
        : Layer.scopedDiscard(
            Effect.forkScoped(
              Sweep.loop(
                credentials.tenants,
                every,
                options.eventGrace ?? Sweeper.DEFAULT_EVENT_GRACE_SECS,
                options.metricTenant ?? false,
              ),
            ),
          )
    // Integration beside the sweeps, in the same scope; another instance doing the same is safe.
    const integrating = Option.match(logKey, {
      onNone: () => Layer.empty,
      onSome: (key) => Layer.scopedDiscard(Effect.forkScoped(Integration.loop(credentials.tenants, key, logEvery))),
    })
    return {
      layer: Layer.merge(sweeping, integrating).pipe(
        Layer.provideMerge(server),
        // The port can still be taken between the probe and the listen.
        Layer.mapError((e) => (e instanceof HttpServerError.ServeError ? Address.unavailable(address, e.cause) : e)),
      ),
      // The verifier key an auditor needs, announced where an operator sees the start.
      log: Option.map(logKey, (k) => `log signed by ${SignedNote.formatVerifierKey(k.signer)}`),
      sealing: Option.match(ring, {
        onNone: () => "payloads in the clear",
        onSome: (r) =>
          r.beside === undefined
            ? `payloads sealed under KEK ${r.kek.id}`
            : `payloads sealed under the KEK file ${r.beside}${Option.isNone(configured) ? ", new" : ""}`,
      }),
    }
  })

/**
 * `--no-kek`: no KEK from the store's side, and none from the environment either, since a KEK
 * there with `--no-kek` leaves it unclear which one governs.
 */
const keysWithoutKek = (keying: Keys.Keying) =>
  Effect.flatMap(Keys.fromFlags(keying), (ring) =>
    Option.isSome(ring)
      ? Effect.fail(new StartRefused({ message: "--no-kek and AGENTPLANE_KEK both given; give one" }))
      : Effect.succeed(ring),
  )

/** Serves until interrupted, announcing the bound address (with `--addr host:0`, the port the system chose). */
export const serve = (options: ServeOptions) =>
  Effect.flatMap(build(options), ({ layer: server, sealing, log }) =>
    HttpServer.addressFormattedWith((address) =>
      Console.log(
        `agentplane serving ${address} (store ${StoreFlag.show(options.store)}, ${sealing}${
          (options.sweepEvery ?? 0) > 0 ? `, sweeping every ${options.sweepEvery}s` : ""
        }${Option.match(log, { onNone: () => "", onSome: (l) => `, ${l}` })})`,
      ),
    ).pipe(
      Effect.zipRight(Effect.never),
      Effect.onInterrupt(() => Console.log("agentplane stopping: finishing requests in flight")),
      Effect.provide(server),
      // Runs once the layer's scope has closed: the listener, then the store.
      Effect.onInterrupt(() => Console.log("agentplane stopped")),
    ),
  ).pipe(
    // Around the whole server, so that every fiber it forks (requests, sweeps) logs as JSON lines.
    Effect.provide(RequestLog.layerLogger({ level: options.logLevel ?? RequestLog.DEFAULT_LEVEL })),
  )

/** `--metrics-token-digest`'s comma-separated digests, each 64 lowercase hex digits. */
const parseDigests = (value: Option.Option<string>): Effect.Effect<ReadonlyArray<Digest.Digest>, StartRefused> =>
  Option.match(value, {
    onNone: () => Effect.succeed([]),
    onSome: (text) =>
      Effect.forEach(text.split(","), (part) =>
        Schema.decodeUnknown(Digest.Digest)(part.trim()).pipe(
          Effect.mapError(
            () =>
              new StartRefused({
                message: `--metrics-token-digest: ${JSON.stringify(part.trim()).slice(0, 80)} is not a SHA-256 digest (64 lowercase hex digits; make one with agentplane token-digest)`,
              }),
          ),
        ),
      ),
  })

export const command = Command.make(
  "serve",
  {
    addr,
    store: StoreFlag.option,
    tokens,
    policy,
    sweepEvery,
    eventGrace: Sweep.eventGrace,
    metricTenant: Sweep.metricTenant,
    timeouts: StoreFlag.timeoutOptions,
    runs: Definitions.option,
    leaseTtl: Definitions.leaseTtl,
    logLevel,
    metricsTokenDigest,
    docsCredential,
    noConsole,
    keying: Keys.options,
    noKek,
    log: LogKeyFile.options,
    logEvery,
  },
  serve,
).pipe(Command.withDescription("serve the operator HTTP API until SIGINT or SIGTERM"))
