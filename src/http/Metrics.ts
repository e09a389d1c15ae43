/**
 * Metrics (§10) over HTTP: every Effect metric of the process, rendered as Prometheus text.
 * Counters are incremented where things happen (`agentplane.policy.denials{action}` by the
 * policy's authoriser, `agentplane.http.requests{method,status}` by `countRequests`).
 *
 * The census gauges are, by §10, set by the sweeper from its census (`cli/Sweep.ts`), in the
 * process's registry, for an exporter of the whole process. This page leaves those out and shows
 * the caller's own census, read now: a registry gauge is the tenant swept last (or, under
 * `--metric-tenant`, every tenant by label), and a caller must see neither another tenant's
 * numbers nor its name.
 */
import { HttpApp } from "@effect/platform"
import { Effect, Metric, MetricState, Option } from "effect"
import type { MetricPair } from "effect/MetricPair"

/** Requests answered, by method and status. */
export const httpRequests = Metric.counter("agentplane.http.requests", {
  description: "HTTP requests answered, by method and status",
  incremental: true,
})

export interface CensusReading {
  readonly openCases: number
  readonly oldestCaseAgeSecs: Option.Option<number>
  readonly dueDeadlines: number
  readonly pendingTimers: number
  readonly openTasks: number
}

/** The census gauges of one reading, as page samples (no open case: an oldest age of 0). */
const censusSamples = (census: CensusReading): ReadonlyArray<Sample> => [
  gauge("agentplane.cases.open", "cases not closed", census.openCases),
  gauge(
    "agentplane.cases.oldest_age",
    "age of the oldest case not closed, in seconds",
    Option.getOrElse(census.oldestCaseAgeSecs, () => 0),
  ),
  gauge("agentplane.deadlines.due", "deadlines due and not met", census.dueDeadlines),
  gauge("agentplane.timers.pending", "armed timers", census.pendingTimers),
  gauge("agentplane.tasks.open", "open, claimed or escalated tasks", census.openTasks),
]

const gauge = (name: string, help: string, value: number): Sample => ({
  name: metricName(name),
  type: "gauge",
  help,
  labels: "",
  value: String(value),
})

/** The §10 census gauges, by name. */
export const CENSUS_GAUGES: ReadonlySet<string> = new Set([
  "agentplane.cases.open",
  "agentplane.cases.oldest_age",
  "agentplane.deadlines.due",
  "agentplane.timers.pending",
  "agentplane.tasks.open",
])

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** Counts every answered request, error responses included, once its status is known. */
export const countRequests = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.zipRight(
    HttpApp.appendPreResponseHandler((request, response) =>
      Effect.as(
        Metric.increment(
          Metric.tagged(
            // A method outside the fixed list would let a client mint label values.
            Metric.tagged(httpRequests, "method", METHODS.has(request.method) ? request.method : "other"),
            "status",
            String(response.status),
          ),
        ),
        response,
      ),
    ),
    app,
  )

/**
 * Every counter and gauge of the process, plus the caller's census when it could be read, in the
 * Prometheus text format (version 0.0.4).
 */
export const render = (census: Option.Option<CensusReading>): Effect.Effect<string> =>
  Effect.map(Metric.snapshot, (pairs) => {
    const families = new Map<string, { type: string; help: string; lines: Array<string> }>()
    const own = pairs.filter((pair) => !CENSUS_GAUGES.has(pair.metricKey.name))
    const samples = [...own.map(toSample), ...Option.match(census, { onNone: () => [], onSome: censusSamples })]
    for (const sample of samples) {
      if (sample === undefined) continue
      const family = families.get(sample.name) ?? { type: sample.type, help: sample.help, lines: [] }
      family.lines.push(`${sample.name}${sample.labels} ${sample.value}`)
      families.set(sample.name, family)
    }
    const out: Array<string> = []
    for (const [name, family] of [...families].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (family.help !== "") out.push(`# HELP ${name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`)
      out.push(`# TYPE ${name} ${family.type}`)
      out.push(...family.lines.sort())
    }
    return `${out.join("\n")}\n`
  })

/** The content type of `render`'s text. */
export const CONTENT_TYPE = "text/plain; version=0.0.4"

// internal

interface Sample {
  readonly name: string
  readonly type: "counter" | "gauge"
  readonly help: string
  readonly labels: string
  readonly value: string
}

/** `agentplane.policy.denials` → `agentplane_policy_denials`: Prometheus names allow no dots. */
const metricName = (name: string): string => name.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/^([0-9])/, "_$1")

const escapeLabel = (value: string): string => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

/** Counters and gauges; histograms, frequencies and summaries are not emitted by agentplane yet. */
const toSample = (pair: MetricPair.Untyped): Sample | undefined => {
  const key = pair.metricKey
  const state: unknown = pair.metricState
  const labels =
    key.tags.length === 0 ? "" : `{${key.tags.map((t) => `${metricName(t.key)}="${escapeLabel(t.value)}"`).join(",")}}`
  const help = Option.getOrElse(key.description, () => "")
  const base = metricName(key.name)
  if (MetricState.isCounterState(state)) {
    const name = base.endsWith("_total") ? base : `${base}_total`
    return { name, type: "counter", help, labels, value: String(state.count) }
  }
  if (MetricState.isGaugeState(state)) return { name: base, type: "gauge", help, labels, value: String(state.value) }
  return undefined
}
