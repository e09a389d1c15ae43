/**
 * The probes and the metrics page. `GET /healthz` is liveness: public, constant, touching no
 * store, so an outage never gets the process restarted. `GET /readyz` is readiness: public, the
 * `Readiness` probe (the store takes a write now), 503 `NotReady` otherwise, so a load balancer
 * stops sending traffic to a process whose store is locked or gone. `GET /metrics` is the
 * process's page for the scrape credential (see `Metrics.ts` for what it shows and why).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Context, Duration, Effect, Metric, Option } from "effect"
import { Tenant } from "../../domain/Tenant.js"
import { CaseStore } from "../../services/CaseStore.js"
import { TaskStore } from "../../services/TaskStore.js"
import { TimerStore } from "../../services/TimerStore.js"
import { Api } from "../Api.js"
import { Credentials } from "../Credentials.js"
import * as Metrics from "../Metrics.js"
import { Readiness } from "../Readiness.js"
import * as Guard from "./Guard.js"

/** Whether the page labels the census by tenant (`--metric-tenant`); off unless the server says so. */
export class MetricTenant extends Context.Reference<MetricTenant>()("agentplane/http/MetricTenant", {
  defaultValue: () => false,
}) {}

/**
 * How long the page waits for the census of all tenants. Past it, or on any store failure, the
 * gauges are left off and the counters still answer: during an outage they are what an operator
 * needs most.
 */
export const CENSUS_TIMEOUT = Duration.seconds(5)

export const layer = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function* () {
    const readiness = yield* Readiness
    const credentials = yield* Credentials
    const cases = yield* CaseStore
    const tasks = yield* TaskStore
    const timers = yield* TimerStore
    const byTenant = yield* MetricTenant
    const reading = (tenant: Tenant["Type"]) =>
      Effect.gen(function* () {
        const [kases, pendingTimers, openTasks] = yield* Effect.all([
          Effect.flatMap(Guard.now, cases.census),
          timers.pendingCount(),
          tasks.openCount(),
        ])
        return {
          openCases: kases.open,
          oldestCaseAgeSecs: kases.oldestAgeSecs,
          dueDeadlines: kases.due,
          pendingTimers,
          openTasks,
        } satisfies Metrics.CensusReading
      }).pipe(Effect.provideService(Tenant, tenant))
    const census: Effect.Effect<ReadonlyArray<Metrics.CensusSample>> = Effect.forEach(credentials.tenants, (tenant) =>
      Effect.map(reading(tenant), (r) => [tenant, r] as const),
    ).pipe(
      Effect.map(
        (all): ReadonlyArray<Metrics.CensusSample> =>
          byTenant
            ? all.map(([tenant, r]) => ({ tenant: Option.some(tenant), reading: r }))
            : Option.match(Metrics.sumCensus(all.map(([, r]) => r)), {
                onNone: () => [],
                onSome: (r) => [{ tenant: Option.none(), reading: r }],
              }),
      ),
      Effect.timeoutFail({ duration: CENSUS_TIMEOUT, onTimeout: () => "census timed out" }),
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("agentplane.metrics.census_unavailable", cause), [])),
    )
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        readiness.check.pipe(
          Effect.as({ status: "ready" as const }),
          Effect.tapError((e) =>
            Effect.logWarning("agentplane.readiness.not_ready").pipe(Effect.annotateLogs({ reason: e.reason })),
          ),
        ),
      )
      .handle("metrics", () =>
        Effect.gen(function* () {
          const samples = yield* census
          return Metrics.render(yield* Metric.snapshot, samples)
        }),
      )
  }),
)
