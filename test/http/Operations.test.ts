/**
 * Operator routes on each backend: census, emergency stop, metrics, and the public health,
 * OpenAPI and documentation pages.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { generateRunId } from "../../src/domain/Ids.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { open as openCase } from "../conformance/case/Fixtures.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const halted = (f: Http.Fixture, tenant = f.tenant) =>
  f.inTenant(
    Effect.flatMap(QuotaStore, (q) => q.halted()),
    tenant,
  )

for (const backend of Http.backends()) {
  describe(`http operations (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("GET /census counts the caller's tenant only", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            yield* f.inTenant(
              Effect.gen(function* () {
                yield* openCase([CorrelationKey.make("claim", "C-1")], 1_000)
                yield* Effect.flatMap(TaskStore, (tasks) => tasks.open(task()))
              }),
            )
            const census = yield* f.as("rita").operations.census()
            assert.deepStrictEqual(
              [census.openCases, census.openTasks, census.pendingTimers, census.runningRuns, census.halted],
              [1, 1, 0, 0, Option.none()],
            )
            assert.isTrue(Option.isSome(census.oldestCaseAgeSecs))
            const theirs = yield* f.as("bob").operations.census()
            assert.deepStrictEqual([theirs.openCases, theirs.openTasks], [0, 0])
          }),
        ),
      )

      it.effect("PUT and DELETE /admin/halt set and lift the caller's tenant's stop; without admin, 403", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const refused = yield* Effect.flip(f.as("rita").admin.halt({ payload: { reason: "incident 7" } }))
            assert.deepStrictEqual(
              [refused._tag, (refused as { action?: string }).action],
              ["Forbidden", "api:admin.halt"],
            )
            assert.deepStrictEqual(yield* halted(f), Option.none())
            yield* f.as("ada").admin.halt({ payload: { reason: "incident 7" } })
            assert.deepStrictEqual(yield* halted(f), Option.some("incident 7"))
            assert.deepStrictEqual(yield* halted(f, f.otherTenant), Option.none())
            assert.deepStrictEqual((yield* f.as("rita").operations.census()).halted, Option.some("incident 7"))
            const lift = yield* Effect.flip(f.as("rita").admin.unhalt())
            assert.strictEqual(lift._tag, "Forbidden")
            assert.deepStrictEqual(yield* halted(f), Option.some("incident 7"))
            yield* f.as("ada").admin.unhalt()
            yield* f.as("ada").admin.unhalt()
            assert.deepStrictEqual(yield* halted(f), Option.none())
          }),
        ),
      )

      it.effect("GET /metrics is Prometheus text with denials by action, requests, and census gauges", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            yield* f.inTenant(Effect.flatMap(TaskStore, (tasks) => tasks.open(task())))
            yield* Effect.flip(f.as("pat").admin.halt({ payload: { reason: "x" } }))
            yield* f.as("rita").operations.census()
            const text = yield* f.scraper.health.metrics()
            assert.match(text, /^# TYPE agentplane_policy_denials_total counter$/m)
            assert.match(text, /^agentplane_policy_denials_total\{action="api:admin\.halt"\} [1-9]\d*$/m)
            assert.match(text, /^agentplane_http_requests_total\{method="GET",status="200"\} [1-9]\d*$/m)
            assert.match(text, /^agentplane_http_requests_total\{method="PUT",status="403"\} [1-9]\d*$/m)
            assert.match(text, /^# TYPE agentplane_tasks_open gauge$/m)
            assert.match(text, /^agentplane_tasks_open 1$/m)
            const raw = yield* f.raw("GET", "/metrics", { headers: { authorization: `Bearer ${f.scrapeToken}` } })
            assert.match(raw.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
            // A tenant's credential is no scrape credential, whatever its roles.
            for (const name of ["rita", "ada", "bob"] as const) {
              assert.strictEqual((yield* f.raw("GET", "/metrics", { as: name })).status, 401, name)
            }
          }),
        ),
      )

      it.effect("/healthz, /openapi.json and /docs are public; every other route needs a credential", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            assert.deepStrictEqual(yield* f.as(undefined).health.healthz(), { status: "ok" })
            const spec = yield* f.raw("GET", "/openapi.json")
            assert.strictEqual(spec.status, 200)
            const paths = Object.keys((spec.json as { paths: Record<string, unknown> }).paths).sort()
            assert.deepStrictEqual(paths, [
              "/admin/halt",
              "/cases",
              "/cases/{case}",
              "/census",
              "/dead-letters",
              "/events",
              "/healthz",
              "/log/checkpoint",
              "/log/consistency",
              "/log/inclusion",
              "/metrics",
              "/obligations",
              "/policy",
              "/readyz",
              "/runs",
              "/runs/{run}",
              "/runs/{run}/cancel",
              "/runs/{run}/journal",
              "/tasks",
              "/tasks/{task}",
              "/tasks/{task}/claim",
              "/tasks/{task}/decide",
              "/tasks/{task}/release",
              "/tasks/{task}/takeover",
            ])
            // §8.2's delivery answers, as the document tells a client.
            const schemas = (spec.json as { components: { schemas: Record<string, unknown> } }).components.schemas
            assert.deepStrictEqual(
              (schemas.DeliveryAnswer as { properties: { result: { enum: unknown } } }).properties.result.enum,
              ["resumed", "buffered", "duplicate"],
            )
            const docs = yield* f.raw("GET", "/docs")
            assert.strictEqual(docs.status, 200)
            assert.match(docs.headers.get("content-type") ?? "", /text\/html/)
            for (const [method, path] of [
              ["GET", "/tasks"],
              ["GET", "/cases"],
              ["GET", "/obligations"],
              ["GET", "/dead-letters"],
              ["GET", "/census"],
              ["GET", "/metrics"],
              ["GET", "/runs"],
              ["GET", `/runs/${generateRunId()}`],
              ["GET", "/log/checkpoint"],
              ["GET", `/log/inclusion?run=${generateRunId()}`],
              ["GET", "/log/consistency?from=1"],
              ["POST", `/runs/${generateRunId()}/cancel`],
              ["POST", "/events"],
              ["PUT", "/admin/halt"],
              ["DELETE", "/admin/halt"],
              ["GET", "/policy"],
            ] as const) {
              const answer = yield* f.raw(method, path)
              assert.strictEqual(answer.status, 401, `${method} ${path}`)
            }
          }),
        ),
      )
    })
  })
}
