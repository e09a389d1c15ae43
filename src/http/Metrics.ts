/**
 * Metrics (§10) over HTTP: every Effect metric of the process, rendered in the Prometheus text
 * format (version 0.0.4) so that `promtool check metrics` passes: every family has help text and
 * a type, a counter is only what can never go down, and names carry their base unit.
 *
 * Who reads it (decided for issue 17): the page is the process's, for the operator of the
 * deployment, so it is scraped with the operator's scrape credential (`serve
 * --metrics-token-digest`), never with a tenant's. Its counters are process-wide (every tenant's
 * requests and denials); the census gauges are read at scrape time for every tenant of the
 * credential table and summed (the oldest age is the maximum), and only under `--metric-tenant`
 * does anything carry a `tenant` label. A tenant reads its own figures from `GET /census`.
 *
 * Rendering rules:
 * - an Effect counter declared `incremental` is a Prometheus `counter` named `…_total`; any other
 *   counter can be decremented (`effect_fiber_active` is one), so it is a `gauge`;
 * - a histogram is `…_bucket{le}` (cumulative, ending at `+Inf`), `…_sum` and `…_count`;
 *   Effect's fiber lifetimes (milliseconds, tagged `time_unit`) are rescaled to seconds;
 * - a name gets its unit suffix from `UNITS` (`agentplane_cases_oldest_age_seconds`);
 * - help text is the metric's description, else `HELP`'s entry, else its Effect name;
 * - frequencies and summaries are left out: nothing in agentplane records one.
 *
 * The sweeper's registry gauges (`cli/Sweep.ts`, the tenant swept last or every tenant by label)
 * are left off the page: the census read at scrape time replaces them.
 */
import { Metric, MetricBoundaries, MetricState, Option } from "effect"
import type { MetricPair } from "effect/MetricPair"

/** Requests answered, by method and status (and tenant under `--metric-tenant`). */
export const httpRequests = Metric.counter("agentplane.http.requests", {
  description: "HTTP requests answered, by method and status",
  incremental: true,
})

/** Seconds from a request's arrival to its response, by method and route template. */
export const httpRequestDuration = Metric.histogram(
  "agentplane.http.request.duration",
  MetricBoundaries.fromIterable([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "seconds from a request's arrival to its response, by method and route template",
)

export interface CensusReading {
  readonly openCases: number
  readonly oldestCaseAgeSecs: Option.Option<number>
  readonly dueDeadlines: number
  readonly pendingTimers: number
  readonly openTasks: number
}

/** One tenant's census, with the tenant when it is to be a label (`--metric-tenant`). */
export interface CensusSample {
  readonly tenant: Option.Option<string>
  readonly reading: CensusReading
}

/** The §10 census gauges, by Effect name. */
export const CENSUS_GAUGES: ReadonlySet<string> = new Set([
  "agentplane.cases.open",
  "agentplane.cases.oldest_age",
  "agentplane.deadlines.due",
  "agentplane.timers.pending",
  "agentplane.tasks.open",
])

/**
 * The readings as one reading: counts summed, the oldest age the maximum. No reading at all is
 * no reading (the page leaves the gauges off), never zeros.
 */
export const sumCensus = (readings: ReadonlyArray<CensusReading>): Option.Option<CensusReading> =>
  readings.length === 0
    ? Option.none()
    : Option.some({
        openCases: readings.reduce((n, r) => n + r.openCases, 0),
        oldestCaseAgeSecs: readings.reduce(
          (age, r) =>
            Option.isNone(r.oldestCaseAgeSecs)
              ? age
              : Option.some(
                  Math.max(
                    r.oldestCaseAgeSecs.value,
                    Option.getOrElse(age, () => 0),
                  ),
                ),
          Option.none<number>(),
        ),
        dueDeadlines: readings.reduce((n, r) => n + r.dueDeadlines, 0),
        pendingTimers: readings.reduce((n, r) => n + r.pendingTimers, 0),
        openTasks: readings.reduce((n, r) => n + r.openTasks, 0),
      })

/** Every metric of `pairs` (the process's snapshot) and the census samples, as the page's text. */
export const render = (pairs: ReadonlyArray<MetricPair.Untyped>, census: ReadonlyArray<CensusSample>): string => {
  const families = new Map<string, Family>()
  const add = (name: string, type: Family["type"], help: string, lines: ReadonlyArray<string>) => {
    const family = families.get(name) ?? { type, help, lines: [] }
    // Two Effect metrics may render to one name only when they agree on the type.
    if (family.type !== type) return
    family.lines.push(...lines)
    families.set(name, family)
  }
  for (const pair of pairs) {
    if (CENSUS_GAUGES.has(pair.metricKey.name)) continue
    const rendered = renderPair(pair)
    if (rendered !== undefined) add(rendered.name, rendered.type, rendered.help, rendered.lines)
  }
  for (const sample of census) {
    const labels = Option.match(sample.tenant, { onNone: () => "", onSome: (t) => `{tenant="${escapeLabel(t)}"}` })
    for (const [name, help, value] of censusValues(sample.reading))
      add(name, "gauge", help, [`${name}${labels} ${value}`])
  }
  const out: Array<string> = []
  for (const [name, family] of [...families].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    out.push(`# HELP ${name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`)
    out.push(`# TYPE ${name} ${family.type}`)
    // Histogram lines keep their order (buckets ascending, then sum and count); others are sorted.
    out.push(...(family.type === "histogram" ? family.lines : [...family.lines].sort()))
  }
  return `${out.join("\n")}\n`
}

/** The content type of `render`'s text. */
export const CONTENT_TYPE = "text/plain; version=0.0.4"

// internal

interface Family {
  readonly type: "counter" | "gauge" | "histogram"
  readonly help: string
  readonly lines: Array<string>
}

/** Help for the metrics declared without a description: Effect's own and the runtime's terse ones. */
const HELP: Readonly<Record<string, string>> = {
  effect_fiber_started: "fibers started",
  effect_fiber_active: "fibers running now",
  effect_fiber_successes: "fibers that ended in success",
  effect_fiber_failures: "fibers that ended in failure",
  effect_fiber_lifetimes: "lifetimes of ended fibers, in seconds",
  "agentplane.replay.divergences": "replays that diverged from the journal",
  "agentplane.quarantines": "runs quarantined",
  "agentplane.effects.undecidable": "effects whose outcome could not be decided",
  "agentplane.runs.unreproducible": "runs that could not be reproduced from their journal",
  "agentplane.effects.reconciled": "effects reconciled with their provider, by verdict",
  "agentplane.budget.refusals": "acts refused by a budget, by limit",
  "agentplane.saga.compensations": "saga compensations, by outcome",
}

/** Base-unit suffixes, and the factor from the recorded value to the base unit. */
const UNITS: Readonly<Record<string, { readonly suffix: string; readonly scale: number; readonly dropTag?: string }>> =
  {
    "agentplane.http.request.duration": { suffix: "seconds", scale: 1 },
    effect_fiber_lifetimes: { suffix: "seconds", scale: 1 / 1000, dropTag: "time_unit" },
  }

const censusValues = (c: CensusReading): ReadonlyArray<readonly [string, string, number]> => [
  ["agentplane_cases_open", "cases not closed", c.openCases],
  [
    "agentplane_cases_oldest_age_seconds",
    "age of the oldest case not closed (0 when none is open)",
    Option.getOrElse(c.oldestCaseAgeSecs, () => 0),
  ],
  ["agentplane_deadlines_due", "deadlines due and not met", c.dueDeadlines],
  ["agentplane_timers_pending", "armed timers", c.pendingTimers],
  ["agentplane_tasks_open", "open, claimed or escalated tasks", c.openTasks],
]

const renderPair = (
  pair: MetricPair.Untyped,
): { name: string; type: Family["type"]; help: string; lines: ReadonlyArray<string> } | undefined => {
  const key = pair.metricKey
  const state: unknown = pair.metricState
  const unit = UNITS[key.name]
  const tags = key.tags.filter((t) => t.key !== unit?.dropTag)
  const help = Option.getOrElse(key.description, () => HELP[key.name] ?? key.name)
  const base = metricName(key.name) + (unit === undefined ? "" : `_${unit.suffix}`)
  const scale = unit?.scale ?? 1
  const labels = (extra: ReadonlyArray<readonly [string, string]> = []) => {
    const all = [...tags.map((t) => [metricName(t.key), t.value] as const), ...extra]
    return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
  }
  if (MetricState.isCounterState(state)) {
    const incremental = (key.keyType as { readonly incremental?: boolean }).incremental === true
    if (!incremental)
      return { name: base, type: "gauge", help, lines: [`${base}${labels()} ${number(Number(state.count))}`] }
    const name = base.endsWith("_total") ? base : `${base}_total`
    return { name, type: "counter", help, lines: [`${name}${labels()} ${number(Number(state.count))}`] }
  }
  if (MetricState.isGaugeState(state)) {
    return { name: base, type: "gauge", help, lines: [`${base}${labels()} ${number(Number(state.value))}`] }
  }
  if (MetricState.isHistogramState(state)) {
    const lines: Array<string> = []
    let sawInfinity = false
    for (const [boundary, count] of state.buckets) {
      sawInfinity = sawInfinity || boundary === Number.POSITIVE_INFINITY
      lines.push(`${base}_bucket${labels([["le", le(boundary * scale)]])} ${count}`)
    }
    if (!sawInfinity) lines.push(`${base}_bucket${labels([["le", "+Inf"]])} ${state.count}`)
    lines.push(`${base}_sum${labels()} ${number(state.sum * scale)}`, `${base}_count${labels()} ${state.count}`)
    return { name: base, type: "histogram", help, lines }
  }
  return undefined
}

/** `agentplane.policy.denials` → `agentplane_policy_denials`: Prometheus names allow no dots. */
const metricName = (name: string): string => name.replace(/[^a-zA-Z0-9_:]/g, "_").replace(/^([0-9])/, "_$1")

const escapeLabel = (value: string): string => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

const le = (boundary: number): string => (boundary === Number.POSITIVE_INFINITY ? "+Inf" : number(boundary))

/** The text format's numbers: `+Inf`, `-Inf`, `NaN`, else JavaScript's shortest round-trip form. */
const number = (value: number): string =>
  Number.isNaN(value)
    ? "NaN"
    : value === Number.POSITIVE_INFINITY
      ? "+Inf"
      : value === Number.NEGATIVE_INFINITY
        ? "-Inf"
        : String(value)
