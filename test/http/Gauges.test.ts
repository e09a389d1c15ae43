/**
 * §10's census gauges on each backend: a sweep tick sets them from its report's census, with a
 * `tenant` dimension only when asked; `/metrics` (the scrape credential's) reads the census of
 * every tenant at scrape time and never shows the registry's gauges, which hold the tenant swept
 * last or name tenants.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Layer, Metric, Option } from "effect"
import * as Sweep from "../../src/cli/Sweep.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Time from "../../src/domain/Time.js"
import * as Server from "../../src/http/Server.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const openCase = (n: number) =>
  Effect.flatMap(CaseStore, (cases) =>
    cases.correlateOrOpen(
      "claim",
      [CorrelationKey.make("claim", `C-${n}-${Math.random()}`)],
      Time.Timestamp.make(1_000),
    ),
  )

for (const backend of Http.backends()) {
  describe(`census gauges (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("a tick sets the gauges from its census, tagged by tenant only when asked", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            yield* f.inTenant(Effect.all([openCase(1), openCase(2)]))
            yield* f.inTenant(openCase(3), f.otherTenant)
            const tagged = (t: string) => Metric.tagged(Sweep.gauges.openCases, "tenant", t)
            const a = yield* Sweep.tick(f.tenant, 86_400, true).pipe(
              Effect.provide(Server.layerRuntime({}).pipe(Layer.provide(PolicyEngine.allowAll))),
            )
            assert.strictEqual(a.census.openCases, 2)
            assert.strictEqual((yield* Metric.value(tagged(f.tenant))).value, 2)
            const b = yield* Sweep.tick(f.otherTenant, 86_400, true).pipe(
              Effect.provide(Server.layerRuntime({}).pipe(Layer.provide(PolicyEngine.allowAll))),
            )
            assert.strictEqual(b.census.openCases, 1)
            // Tenant A's labelled gauge keeps its own value.
            assert.deepStrictEqual(
              [(yield* Metric.value(tagged(f.tenant))).value, (yield* Metric.value(tagged(f.otherTenant))).value],
              [2, 1],
            )
            // Compared with this tick's own census: an age read one tick earlier may be a second younger.
            const c = yield* Sweep.tick(f.otherTenant, 86_400, false).pipe(
              Effect.provide(Server.layerRuntime({}).pipe(Layer.provide(PolicyEngine.allowAll))),
            )
            assert.strictEqual((yield* Metric.value(Sweep.gauges.openCases)).value, 1)
            const oldest = (yield* Metric.value(Sweep.gauges.oldestCaseAge)).value
            assert.strictEqual(
              oldest,
              Option.getOrElse(c.census.oldestCaseAgeSecs, () => -1),
            )
            // The page is read at scrape time, not from the registry's gauges: every tenant of the
            // credential table summed (2 + 1), no tenant label, whichever tenant was swept last.
            const page = yield* f.raw("GET", "/metrics", { headers: { authorization: `Bearer ${f.scrapeToken}` } })
            assert.strictEqual(page.status, 200)
            const lines = page.text.split("\n").filter((l) => l.startsWith("agentplane_cases_open"))
            assert.deepStrictEqual(lines, ["agentplane_cases_open 3"])
            assert.isFalse(page.text.includes(f.otherTenant) || page.text.includes(f.tenant))
          }),
        ),
      )
    })
  })
}
