/**
 * Sweeping from the command line (§7.10, §8.3): `agentplane sweep` runs one tick for a tenant and
 * prints its `SweepReport`; `serve --sweep-every` runs `loop` beside the server. After every tick
 * the §10 census gauges are set from the report's census (never kept as running counts), with a
 * `tenant` dimension only under `--metric-tenant`: without it a gauge holds the tenant swept last,
 * which is what one tenant per deployment wants and what a tenant label would only multiply.
 */
import { Command, Options } from "@effect/cli"
import { NodeFileSystem } from "@effect/platform-node"
import { Config, Console, Duration, Effect, Either, Layer, Logger, Metric, Option, Schedule, Schema } from "effect"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import * as Credentials from "../http/Credentials.js"
import * as RequestLog from "../http/RequestLog.js"
import * as Server from "../http/Server.js"
import * as PolicyEngineCedar from "../layers/PolicyEngineCedar.js"
import * as Bundle from "../policy/Bundle.js"
import { Runtime } from "../runtime/Runtime.js"
import * as Sweeper from "../runtime/Sweeper.js"
import { PolicyEngine } from "../services/PolicyEngine.js"
import type * as Stores from "../services/Stores.js"
import * as Definitions from "./Definitions.js"
import * as Integration from "./Integration.js"
import * as Keys from "./Keys.js"
import * as LogKeyFile from "./LogKeyFile.js"
import * as StoreFlag from "./StoreFlag.js"

export const eventGrace = Options.integer("event-grace").pipe(
  Options.withDescription(
    `seconds an event no run claimed is kept before it is dead-lettered (env AGENTPLANE_EVENT_GRACE); default ${Sweeper.DEFAULT_EVENT_GRACE_SECS}`,
  ),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_EVENT_GRACE")),
  Options.withDefault(Sweeper.DEFAULT_EVENT_GRACE_SECS),
)

export const metricTenant = Options.boolean("metric-tenant").pipe(
  Options.withDescription("give the census gauges a tenant dimension (env AGENTPLANE_METRIC_TENANT)"),
  Options.withFallbackConfig(Config.boolean("AGENTPLANE_METRIC_TENANT")),
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant to sweep (env AGENTPLANE_TENANT); default default"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault(Tenant.DEFAULT as string),
)

const policy = Options.text("policy").pipe(
  Options.withDescription(
    "the Cedar bundle the tenant's runs were admitted under, as `serve --policy` took it (env AGENTPLANE_POLICY); absent, a woken run is not resumed (a wake failure)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_POLICY")),
  Options.optional,
)

const tokens = Options.text("tokens").pipe(
  Options.withDescription(
    "the credential table serve uses (env AGENTPLANE_TOKENS): a --tenant it does not list is refused; absent, any tenant is swept",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TOKENS")),
  Options.optional,
)

/** `--tenant` names a tenant no credential of `--tokens` acts for: a sweep of it would find nothing to do. */
export class TenantUnknown extends Schema.TaggedError<TenantUnknown>()("TenantUnknown", {
  tenant: Schema.String,
  tokens: Schema.String,
}) {
  override get message(): string {
    return `--tenant ${JSON.stringify(this.tenant)}: no credential of ${this.tokens} (--tokens, AGENTPLANE_TOKENS) acts for it; sweep a tenant the table lists`
  }
}

/** The §10 census gauges. */
export const gauges = {
  openCases: Metric.gauge("agentplane.cases.open", { description: "cases not closed" }),
  oldestCaseAge: Metric.gauge("agentplane.cases.oldest_age", {
    description: "age of the oldest case not closed, in seconds (unit s)",
  }),
  dueDeadlines: Metric.gauge("agentplane.deadlines.due", { description: "deadlines due and not met" }),
  pendingTimers: Metric.gauge("agentplane.timers.pending", { description: "armed timers" }),
  openTasks: Metric.gauge("agentplane.tasks.open", { description: "open, claimed or escalated tasks" }),
} as const

/** Sets the gauges from `report`'s census; a census the tick could not read leaves them as they were. */
export const setGauges = (report: Sweeper.SweepReport, tenant: Option.Option<Tenant.TenantId>) =>
  Effect.gen(function* () {
    if (report.censusUnavailable) return
    const tag = <G extends Metric.Metric.Gauge<number>>(gauge: G) =>
      Option.match(tenant, { onNone: () => gauge, onSome: (t) => Metric.tagged(gauge, "tenant", t) })
    const c = report.census
    yield* Metric.set(tag(gauges.openCases), c.openCases)
    yield* Metric.set(
      tag(gauges.oldestCaseAge),
      Option.getOrElse(c.oldestCaseAgeSecs, () => 0),
    )
    yield* Metric.set(tag(gauges.dueDeadlines), c.dueDeadlines)
    yield* Metric.set(tag(gauges.pendingTimers), c.pendingTimers)
    yield* Metric.set(tag(gauges.openTasks), c.openTasks)
  })

/** One tick for `tenant` now, its gauges set (tenant-tagged when `tagTenant`). */
export const tick = (tenant: Tenant.TenantId, graceSecs: number, tagTenant: boolean) =>
  Effect.gen(function* () {
    const now = Time.fromMillis(yield* Effect.clockWith((c) => c.currentTimeMillis))
    const report = yield* Sweeper.sweep(now, graceSecs).pipe(Effect.provideService(Tenant.Tenant, tenant))
    yield* setGauges(report, tagTenant ? Option.some(tenant) : Option.none())
    return report
  })

/**
 * Sweeps every tenant of `tenants` once per `everySecs`, forever; a tick that fails is logged and
 * the next period tries again. Meant to run in a background fiber of the server's scope.
 */
export const loop = (
  tenants: ReadonlyArray<Tenant.TenantId>,
  everySecs: number,
  graceSecs: number,
  tagTenant: boolean,
): Effect.Effect<never, never, Runtime | Stores.Stores> =>
  Effect.forEach(tenants, (t) =>
    tick(t, graceSecs, tagTenant).pipe(
      Effect.tap((report) =>
        Sweeper.needsAttention(report)
          ? Effect.logWarning("agentplane.sweep.needs_attention").pipe(Effect.annotateLogs({ tenant: t }))
          : Effect.void,
      ),
      Effect.catchAllCause((cause) => Effect.logError("agentplane.sweep.failed", cause)),
    ),
  ).pipe(Effect.repeat(Schedule.spaced(Duration.seconds(everySecs))), Effect.zipRight(Effect.never))

/** The report as JSON: absences are `null`. */
export const reportJson = (report: Sweeper.SweepReport) => ({
  ...report,
  record: Option.getOrNull(report.record),
  census: { ...report.census, oldestCaseAgeSecs: Option.getOrNull(report.census.oldestCaseAgeSecs) },
})

export const command = Command.make(
  "sweep",
  {
    store: StoreFlag.option,
    tenant,
    tokens,
    eventGrace,
    timeouts: StoreFlag.timeoutOptions,
    keying: Keys.options,
    runs: Definitions.option,
    policy,
    log: LogKeyFile.options,
  },
  ({ store, tenant, tokens, eventGrace, timeouts, keying, runs, policy, log }) =>
    Effect.gen(function* () {
      const id = yield* Either.match(Tenant.parse(tenant), {
        onLeft: (e) => Effect.fail(e),
        onRight: Effect.succeed,
      })
      // A typo in a cron line's tenant would sweep an empty tenant and report all quiet for ever.
      if (Option.isSome(tokens)) {
        const table = yield* Credentials.fromFile(tokens.value)
        if (!table.tenants.includes(id)) return yield* new TenantUnknown({ tenant: id, tokens: tokens.value })
      }
      // The same module `serve --runs` takes: without it a sweep from cron cannot resume a woken run
      // (its capability is not registered) and counts a wake failure every tick.
      const loaded = yield* Definitions.fromOption(runs)
      // A woken run goes on under the bundle it was admitted under (§7.12): without it, a Resume
      // is refused and counted as a wake failure, never run under another policy.
      const engine: Layer.Layer<never> | Layer.Layer<PolicyEngine> = Option.isSome(policy)
        ? Layer.succeed(
            PolicyEngine,
            PolicyEngineCedar.engine(
              yield* Effect.flatMap(
                Bundle.read(policy.value).pipe(Effect.provide(NodeFileSystem.layer)),
                PolicyEngineCedar.load,
              ),
            ),
          )
        : Layer.empty
      const logKey = yield* LogKeyFile.load(log)
      // A tick wakes runs and dead-letters events, so it seals and opens as `serve` does.
      const ring = yield* Keys.resolve(keying, store)
      const [report, integrated] = yield* tick(id, eventGrace, false).pipe(
        // A woken run resumes in a background fiber of the runtime; closing the runtime would
        // interrupt it, so the sweep waits until every run it woke has finished or suspended.
        Effect.tap(() => Effect.flatMap(Runtime, (runtime) => runtime.idle)),
        // With a log key, what this tick and earlier ones sealed is integrated and signed.
        Effect.zip(
          Option.match(logKey, {
            onNone: () => Effect.succeedNone,
            onSome: (key) => Effect.asSome(Integration.catchUp(key).pipe(Effect.provideService(Tenant.Tenant, id))),
          }),
        ),
        Effect.provide(
          Server.layerRuntime({ definitions: loaded.register }).pipe(
            Layer.provide(engine),
            Layer.provideMerge(Keys.stores(store, timeouts, ring)),
          ),
        ),
      )
      const shown = Option.match(integrated, {
        onNone: () => reportJson(report),
        onSome: (log) => ({ ...reportJson(report), log }),
      })
      yield* Console.log(JSON.stringify(shown, null, 2))
      // Exit 2 when an operator should look (§8.3); `runMain` leaves a successful exit's code alone.
      // The warning is the line a cron mail or a log collector alerts on, as `serve`'s loop logs it.
      if (Sweeper.needsAttention(report)) {
        yield* Effect.logWarning("agentplane.sweep.needs_attention").pipe(Effect.annotateLogs({ tenant: id }))
        yield* Effect.sync(() => (process.exitCode = 2))
      }
    }).pipe(Effect.provide(layerStderrLogger())),
).pipe(Command.withDescription("sweep one tenant once and print the report as JSON; exit 2 when it needs attention"))

/**
 * Every log line to standard error, so standard output is the report alone and `sweep | jq .`
 * parses in every state: JSON lines when standard error is not a terminal (a cron mail, a log
 * collector), the pretty form when a person watches.
 */
const layerStderrLogger = (): Layer.Layer<never> =>
  process.stderr.isTTY === true
    ? Layer.mergeAll(
        Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true })),
        Logger.remove(Logger.prettyLoggerDefault),
      )
    : RequestLog.layerLogger({ level: "info", write: (line) => process.stderr.write(`${line}\n`) })
