/**
 * `/metrics` as a Prometheus scraper reads it (issue 17): the page parses with a Prometheus
 * text-format parser (`parse-prometheus-text-format`) and passes the rules `promtool check
 * metrics` applies, written out here because the parser alone is lenient: one HELP and one TYPE
 * per family before its samples, counters and only counters end in `_total`, histograms end at
 * `+Inf` with cumulative buckets equal to their count, units as suffixes. Effect's fiber metrics
 * are on the page with help and the right type, requests have a latency histogram per route, and
 * the page is the scrape credential's: no tenant label unless `metricTenant`, and then each
 * tenant's own figures under its own label.
 */
import { createRequire } from "node:module"
import { describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Metric, Option, RuntimeFlags } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Time from "../../src/domain/Time.js"
import * as Metrics from "../../src/http/Metrics.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

interface Family {
  readonly name: string
  readonly help: string
  readonly type: string
  readonly metrics: ReadonlyArray<{
    readonly labels?: Record<string, string>
    readonly value?: string
    readonly buckets?: Record<string, string>
    readonly count?: string
  }>
}
const parse = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => Array<Family>

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/

/** promtool's rules over `text`; returns the parsed families. */
const lint = (text: string): ReadonlyArray<Family> => {
  const families = parse(text)
  const declared = new Map<string, { help: number; type: number }>()
  for (const line of text.split("\n")) {
    const meta = /^# (HELP|TYPE) (\S+)/.exec(line)
    if (meta !== null) {
      const [, kind, name] = meta as unknown as [string, "HELP" | "TYPE", string]
      const seen = declared.get(name) ?? { help: 0, type: 0 }
      seen[kind === "HELP" ? "help" : "type"] += 1
      declared.set(name, seen)
      continue
    }
    if (line === "") continue
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1] ?? ""
    const family = [sample, sample.replace(/_(bucket|sum|count)$/, "")].find((n) => declared.has(n))
    assert.isTrue(family !== undefined, `a sample before its family's HELP and TYPE: ${line}`)
  }
  for (const [name, seen] of declared) {
    assert.deepStrictEqual(seen, { help: 1, type: 1 }, `${name}: one HELP and one TYPE`)
  }
  for (const family of families) {
    assert.match(family.name, NAME)
    assert.isTrue(family.help.trim().length > 0, `${family.name} has no help`)
    assert.isTrue(family.type !== "UNTYPED", `${family.name} has no type`)
    assert.strictEqual(family.type === "COUNTER", family.name.endsWith("_total"), `${family.name}: _total iff counter`)
    for (const m of family.metrics) {
      for (const label of Object.keys(m.labels ?? {})) assert.match(label, NAME)
      if (family.type !== "HISTOGRAM") {
        assert.isFalse(Number.isNaN(Number(m.value)), `${family.name}: a number`)
      }
    }
  }
  for (const f of families.filter((f) => f.type === "HISTOGRAM")) histogram(text, f.name)
  return families
}

/**
 * A histogram's series, read from the text: the parser keeps labelled histograms only as one
 * unlabelled series, so buckets, sum and count are checked here, per label set.
 */
const histogram = (text: string, name: string): ReadonlyArray<string> => {
  const series = new Map<string, Array<readonly [string, number]>>()
  const counts = new Map<string, number>()
  for (const line of text.split("\n")) {
    const bucket = new RegExp(`^${name}_bucket\\{(.*?),?le="([^"]+)"\\} (\\S+)$`).exec(line)
    if (bucket !== null) {
      const [, labels = "", le = "", value = ""] = bucket
      series.set(labels, [...(series.get(labels) ?? []), [le, Number(value)]])
    }
    const count = new RegExp(`^${name}_count(?:\\{(.*)\\})? (\\S+)$`).exec(line)
    if (count !== null) counts.set(count[1] ?? "", Number(count[2]))
    assert.isFalse(new RegExp(`^${name}_sum`).test(line) && Number.isNaN(Number(line.split(" ").at(-1))))
  }
  assert.isTrue(series.size > 0, `${name} has no series`)
  for (const [labels, buckets] of series) {
    const bounds = buckets.map(([le]) => (le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le)))
    assert.deepStrictEqual(
      bounds,
      [...bounds].sort((a, b) => a - b),
      `${name}{${labels}}: le ascending`,
    )
    assert.strictEqual(buckets.at(-1)?.[0], "+Inf", `${name}{${labels}} ends at +Inf`)
    const values = buckets.map(([, v]) => v)
    assert.deepStrictEqual(
      values,
      [...values].sort((a, b) => a - b),
      `${name}{${labels}}: cumulative`,
    )
    assert.strictEqual(values.at(-1), counts.get(labels), `${name}{${labels}}: +Inf is the count`)
  }
  return [...series.keys()]
}

const family = (families: ReadonlyArray<Family>, name: string): Family => {
  const found = families.find((f) => f.name === name)
  if (found === undefined) return assert.fail(`no family ${name}`)
  return found
}

const openCase = (n: number) =>
  Effect.flatMap(CaseStore, (cases) =>
    cases.correlateOrOpen(
      "claim",
      [CorrelationKey.make("claim", `C-${n}-${Math.random()}`)],
      Time.Timestamp.make(1_000),
    ),
  )

describe("metrics exposition", () => {
  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    it.effect("the page parses and passes promtool's rules, fiber metrics and latency histograms included", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          // Effect records its fiber metrics only under this runtime flag.
          yield* Effect.fork(Effect.sleep("1 millis")).pipe(
            Effect.flatMap(Fiber.join),
            Effect.provide(RuntimeFlags.enableRuntimeMetrics),
          )
          yield* f.inTenant(openCase(1))
          yield* f.raw("GET", "/healthz")
          yield* f.raw("GET", "/tasks", { as: "nobody" })
          const text = yield* f.scraper.health.metrics()
          const families = lint(text)
          // A counter Effect lets go down is a gauge; lifetimes are in seconds, without a unit label.
          assert.strictEqual(family(families, "effect_fiber_active").type, "GAUGE")
          assert.strictEqual(family(families, "effect_fiber_started_total").type, "COUNTER")
          const lifetimes = family(families, "effect_fiber_lifetimes_seconds")
          assert.strictEqual(lifetimes.type, "HISTOGRAM")
          assert.isFalse(text.includes("time_unit"))
          // One latency series per route template and method.
          const latency = family(families, "agentplane_http_request_duration_seconds")
          assert.strictEqual(latency.type, "HISTOGRAM")
          const routes = histogram(text, latency.name)
          assert.include(routes, 'method="GET",route="/healthz"')
          assert.include(routes, 'method="GET",route="/tasks"')
          // Base units as suffixes.
          assert.strictEqual(family(families, "agentplane_cases_oldest_age_seconds").type, "GAUGE")
          assert.doesNotMatch(text, /^agentplane_cases_oldest_age /m)
          assert.strictEqual(family(families, "agentplane_cases_open").metrics[0]?.value, "1")
          // No tenant label without --metric-tenant, and no tenant named.
          assert.doesNotMatch(text, /tenant="/)
          assert.isFalse(text.includes(f.tenant))
        }),
      ),
    )

    it.effect("under metricTenant each tenant's census carries its own label and figures", () =>
      Http.withServer(
        (f) =>
          Effect.gen(function* () {
            yield* f.inTenant(Effect.all([openCase(1), openCase(2)]))
            yield* f.inTenant(openCase(3), f.otherTenant)
            yield* f.raw("GET", "/tasks", { as: "bob" })
            const families = lint(yield* f.scraper.health.metrics())
            const open = family(families, "agentplane_cases_open").metrics.map((m) => [m.labels?.tenant, m.value])
            assert.deepStrictEqual(
              [...open].sort(),
              [
                [f.tenant, "2"],
                [f.otherTenant, "1"],
              ].sort(),
            )
            const requests = family(families, "agentplane_http_requests_total").metrics
            assert.isTrue(requests.some((m) => m.labels?.tenant === f.otherTenant && m.labels?.status === "200"))
            // Still nobody but the scraper reads it.
            assert.strictEqual((yield* f.raw("GET", "/metrics", { as: "bob" })).status, 401)
          }),
        { metricTenant: true },
      ),
    )
  })
})

describe("metrics rendering", () => {
  it.effect("a counter that is not incremental renders as a gauge; an empty census leaves the gauges off", () =>
    Effect.gen(function* () {
      const updown = Metric.counter(`test.updown.${Math.random().toString(36).slice(2)}`, {
        description: "up and down",
      })
      yield* Metric.incrementBy(updown, 3)
      yield* Metric.incrementBy(updown, -1)
      const text = Metrics.render(yield* Metric.snapshot, [])
      const families = lint(text)
      const rendered = families.find((f) => f.metrics.length > 0 && f.help === "up and down")
      assert.strictEqual(rendered?.type, "GAUGE")
      assert.strictEqual(rendered?.metrics[0]?.value, "2")
      assert.doesNotMatch(text, /^agentplane_cases_open/m)
      assert.deepStrictEqual(Metrics.sumCensus([]), Option.none())
    }),
  )
})
