/**
 * The HTTP suite's Cedar bundle (`test/support/RoutePolicy.ts`) answers as the JSON allow list
 * the suite ran under before: for every action and every set of the suite's roles (on the API,
 * a case and a run), the Cedar authoriser allows exactly what `JsonPolicy.allows` allows; and
 * over HTTP, every authenticated route of the API, called by every caller of the suite, is
 * refused 403 `Forbidden` exactly when the JSON list would refuse that caller the route's action.
 * The route table must name every authenticated route, so a new route cannot escape it. And
 * `GET /policy` shows the identity of the bundle the server decides by, to whom it permits.
 */
import { describe, it, layer } from "@effect/vitest"
import { Effect, Either, Exit } from "effect"
import { generateCaseId, generateRunId } from "../../src/domain/Ids.js"
import { TenantId } from "../../src/domain/Tenant.js"
import { Action, Authorizer } from "../../src/http/Authorizer.js"
import { Caller } from "../../src/http/Caller.js"
import * as JsonPolicy from "../../src/http/JsonPolicy.js"
import * as Routes from "../../src/http/Routes.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as RoutePolicy from "../support/RoutePolicy.js"

const reference = Either.getOrThrow(JsonPolicy.decode(RoutePolicy.json, "the suite's JSON policy"))

const subsets = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: 2 ** items.length }, (_, mask) => items.filter((_, i) => (mask & (1 << i)) !== 0))

/** The routes no credential of the table reaches: public, or the scrape credential's. */
const UNAUTHENTICATED = new Set(["GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json", "GET /docs"])

const run = generateRunId()
const kase = generateCaseId()
const task = `task_${"0123456789abcdef".repeat(4)}`
const json = { "content-type": "application/json" }

interface Call {
  readonly action: Action
  readonly path: string
  readonly headers?: Record<string, string>
  /** A body the route decodes, so the request reaches the authoriser (a 422 would come first). */
  readonly body?: unknown
}

/** One request per authenticated route, by `METHOD template`, with the action its handler authorises. */
const CALLS: Readonly<Record<string, Call>> = {
  "POST /events": {
    action: "api:event.deliver",
    path: "/events",
    headers: json,
    body: { id: "e-1", kind: "k", correlation: [{ namespace: "n", value: "v" }], payload: {} },
  },
  "OPTIONS /events": {
    action: "api:event.deliver",
    path: "/events",
    headers: { "webhook-request-origin": "producer.example" },
  },
  "GET /tasks": { action: "api:task.list", path: "/tasks" },
  "GET /tasks/:task": { action: "api:task.read", path: `/tasks/${task}` },
  "POST /tasks/:task/claim": { action: "api:task.claim", path: `/tasks/${task}/claim` },
  "POST /tasks/:task/release": { action: "api:task.release", path: `/tasks/${task}/release` },
  "POST /tasks/:task/takeover": {
    action: "api:task.takeover",
    path: `/tasks/${task}/takeover`,
    headers: json,
    body: { from: "someone" },
  },
  "POST /tasks/:task/decide": {
    action: "api:task.decide",
    path: `/tasks/${task}/decide`,
    headers: json,
    body: { approved: true, reason: "fine" },
  },
  "GET /cases": { action: "api:case.list", path: "/cases" },
  "GET /cases/:case": { action: "api:case.read", path: `/cases/${kase}` },
  "GET /obligations": { action: "api:obligation.list", path: "/obligations" },
  "GET /runs": { action: "api:run.list", path: "/runs" },
  "POST /runs": { action: "api:run.start", path: "/runs", headers: json, body: { capability: "none", input: {} } },
  "GET /runs/:run": { action: "api:run.read", path: `/runs/${run}` },
  "POST /runs/:run/cancel": {
    action: "api:run.cancel",
    path: `/runs/${run}/cancel`,
    headers: json,
    body: { reason: "test" },
  },
  "GET /runs/:run/journal": { action: "api:run.journal", path: `/runs/${run}/journal` },
  "GET /dead-letters": { action: "api:deadletter.list", path: "/dead-letters" },
  "GET /census": { action: "api:census.read", path: "/census" },
  "PUT /admin/halt": { action: "api:admin.halt", path: "/admin/halt", headers: json, body: { reason: "test" } },
  "DELETE /admin/halt": { action: "api:admin.halt", path: "/admin/halt" },
  "GET /policy": { action: "api:policy.read", path: "/policy" },
  "GET /log/checkpoint": { action: "api:log.read", path: "/log/checkpoint" },
  "GET /log/inclusion": { action: "api:log.read", path: `/log/inclusion?run=${run}&size=1` },
  "GET /log/consistency": { action: "api:log.read", path: "/log/consistency?from=1&to=1" },
}

const callerOf = (roles: ReadonlyArray<string>) =>
  new Caller({ tenant: TenantId.make("acme"), actor: "someone", roles: [...roles] })

describe("the HTTP suite's route policy", () => {
  it("the route table names every authenticated route of the API, each once", () => {
    const served = Routes.table.map((r) => `${r.method} ${r.path}`).filter((r) => !UNAUTHENTICATED.has(r))
    assert.deepStrictEqual([...served].sort(), Object.keys(CALLS).sort())
  })

  it.effect("the Cedar bundle allows exactly what the JSON list allows, for every action and set of roles", () =>
    Effect.gen(function* () {
      const authorizer = yield* Authorizer
      let allowed = 0
      let compared = 0
      for (const roles of subsets(["reviewer", "producer", "admin", "finance", "observer"])) {
        for (const action of Action.literals) {
          for (const resource of [undefined, kase, run]) {
            const caller = callerOf(roles)
            const exit = yield* Effect.exit(authorizer.authorize(caller, action, resource))
            const expected = JsonPolicy.allows(reference, caller, action)
            assert.strictEqual(Exit.isSuccess(exit), expected, `${action} on ${resource} for [${roles.join(", ")}]`)
            compared++
            if (expected) allowed++
          }
        }
      }
      // Both answers were compared.
      assert.isTrue(allowed > 0 && allowed < compared)
    }).pipe(Effect.provide(RoutePolicy.authorizer)),
  )
})

for (const backend of Http.backends()) {
  layer(backend.layer, { excludeTestServices: true })((it) => {
    it.effect(`over HTTP, every route refuses every caller exactly as the JSON list did (${backend.name})`, () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          let refused = 0
          let served = 0
          for (const [route, call] of Object.entries(CALLS)) {
            const method = route.slice(0, route.indexOf(" "))
            for (const name of Object.keys(Http.callers) as Array<Http.CallerName>) {
              const response = yield* f.raw(method, call.path, {
                as: name,
                ...(call.headers === undefined ? {} : { headers: call.headers }),
                ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
              })
              const tag = (response.json as { _tag?: unknown } | undefined)?._tag
              const forbidden = response.status === 403 && tag === "Forbidden"
              const caller = callerOf(Http.callers[name].roles)
              const expected = !JsonPolicy.allows(reference, caller, call.action)
              assert.strictEqual(forbidden, expected, `${route} as ${name}: ${response.status} ${response.text}`)
              if (forbidden) refused++
              else served++
            }
          }
          assert.isTrue(refused > 0 && served > 0)
        }),
      ),
    )

    it.effect(
      `GET /policy shows the bundle's digest, files and policies to whom the policy lets read it (${backend.name})`,
      () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const shown = yield* f.as("ada").policy.read()
            assert.deepStrictEqual(shown, {
              digest: RoutePolicy.bundle.digest,
              digestRule: 1,
              schemaVersion: 1,
              files: ["routes.cedar"],
              policies: [
                { id: "reviewers: everything but delivery, the emergency stop and the policy", effect: "permit" },
                { id: "producers deliver events", effect: "permit" },
                { id: "admins halt and read the policy", effect: "permit" },
              ],
            })
            // The other tenant's admin sees the same: the bundle is the server's, not a tenant's.
            assert.deepStrictEqual(yield* f.as("bob").policy.read(), shown)
            const refused = yield* f.raw("GET", "/policy", { as: "rita" })
            assert.strictEqual(refused.status, 403)
            assert.deepStrictEqual(refused.json, {
              action: "api:policy.read",
              message: "no policy permits api:policy.read",
              _tag: "Forbidden",
            })
            assert.strictEqual((yield* f.raw("GET", "/policy")).status, 401)
          }),
        ),
    )
  })
}
