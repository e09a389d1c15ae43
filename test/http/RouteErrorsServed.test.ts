/**
 * Issue 49 item 3, served: route by route, every error the OpenAPI document lists for it is
 * provoked against a real server, and the answer has the listed status and the error's tag. A
 * route that gains or loses an error in the document fails here until its provocation is added
 * or removed, so the list a client reads is the list the server answers with.
 *
 * Four servers share one SQLite store, each with one fault: none (the route policy, the stores),
 * an authoriser that cannot decide, stores that fail as an outage does (`Backend`), stores whose
 * values do not decode (`Corrupt`), and a readiness probe that says not ready. The broken stores
 * fail every method, so each route's own store reads meet the fault wherever they start.
 */
import { randomBytes } from "node:crypto"
import { HttpServer } from "@effect/platform"
import { describe, layer, it as plain } from "@effect/vitest"
import { Context, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { generateRunId } from "../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import { Backend as BackendError, Corrupt } from "../../src/errors/StoreError.js"
import { MAX_BODY_BYTES } from "../../src/http/Api.js"
import { Authorizer, AuthorizerUnavailable } from "../../src/http/Authorizer.js"
import * as Credentials from "../../src/http/Credentials.js"
import * as Readiness from "../../src/http/Readiness.js"
import * as Server from "../../src/http/Server.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import { Runtime } from "../../src/runtime/Runtime.js"
import { BatchStore } from "../../src/services/BatchStore.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import { deploymentKey, NOW, sealed } from "../conformance/log/Fixtures.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"
import * as RoutePolicy from "../support/RoutePolicy.js"
import * as Definitions from "./Definitions.js"
import { documented } from "./RouteErrorTable.js"

interface Answer {
  readonly status: number
  readonly tag: string | undefined
}

interface Served {
  readonly tenant: TenantId
  readonly runtime: Runtime["Type"]
  readonly send: (
    method: string,
    path: string,
    options?: {
      readonly as?: Http.CallerName | "scraper"
      readonly headers?: Record<string, string>
      readonly body?: string
    },
  ) => Effect.Effect<Answer>
  readonly inTenant: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, Tenant>>
}

interface Fault {
  readonly authorizer?: "down"
  readonly stores?: BackendError | Corrupt
  readonly readiness?: "down"
}

const STORE_TAGS = [CaseStore, EventStore, TimerStore, TaskStore, BatchStore, QuotaStore, JournalStore, LogStore]

/** `context`'s stores with every method failing with `error`: an outage (or damage) met by whatever a route reads first. */
const broken = (context: Context.Context<Stores.Stores>, error: BackendError | Corrupt) =>
  STORE_TAGS.reduce((ctx, tag) => {
    const service = Context.get(ctx, tag as Context.Tag<Stores.Stores, object>)
    const failing = Object.fromEntries(
      Object.entries(service).map(([name, value]) => [
        name,
        typeof value === "function" ? () => Effect.fail(error) : value,
      ]),
    )
    return Context.add(ctx, tag as Context.Tag<Stores.Stores, object>, failing)
  }, context)

const downAuthorizer = Layer.succeed(Authorizer, {
  authorize: () => Effect.fail(new AuthorizerUnavailable({ message: "the policy engine cannot evaluate" })),
})

const notReady = Layer.succeed(Readiness.Readiness, {
  check: Effect.fail(new Readiness.NotReady({ reason: "store_locked", message: "the store is locked" })),
})

/** A server with `fault`, for the duration of `body`, over the test's stores (a fresh tenant each). */
const serving = <A, E>(fault: Fault, body: (s: Served) => Effect.Effect<A, E, Stores.Stores>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const tenant = Backend.freshTenant()
      const names = Object.keys(Http.callers) as Array<Http.CallerName>
      const tokens = Object.fromEntries(names.map((n) => [n, `tok-${randomBytes(16).toString("hex")}`])) as Record<
        Http.CallerName,
        string
      >
      const scrapeToken = `scrape-${randomBytes(16).toString("hex")}`
      const entries = names.map((name) => ({
        digest: Credentials.digest(tokens[name]),
        tenant: Http.callers[name].tenant === "a" ? tenant : Backend.freshTenant(),
        actor: name,
        roles: [...Http.callers[name].roles],
      }))
      const stores = yield* Effect.context<Stores.Stores>()
      const defs = [Definitions.awaitsPayment, Definitions.quarantines]
      const server = Server.layer({
        host: "127.0.0.1",
        port: 0,
        definitions: Layer.mergeAll(
          Layer.empty,
          ...defs.map((def) => RunDefinition.register(def) as Layer.Layer<never, never, RunDefinition.Registry>),
        ),
        startable: [Definitions.awaitsPayment],
        readiness: fault.readiness === "down" ? notReady : Readiness.layerAlways,
        scrapeDigests: [Credentials.digest(scrapeToken)],
      }).pipe(
        Layer.provide(Credentials.layerEntries(entries, "test")),
        // The route bundle's identity stays the real one; only the decision fails.
        Layer.provide(fault.authorizer === "down" ? Layer.merge(RoutePolicy.layer, downAuthorizer) : RoutePolicy.layer),
        Layer.provide(PolicyEngine.allowAll),
        Layer.provide(Layer.succeedContext(fault.stores === undefined ? stores : broken(stores, fault.stores))),
      )
      const context = yield* Layer.build(server)
      const address = Context.get(context, HttpServer.HttpServer).address
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const send: Served["send"] = (method, path, options = {}) =>
        Effect.promise(async () => {
          const headers: Record<string, string> = { ...options.headers }
          const as = options.as
          if (as !== undefined) headers.authorization = `Bearer ${as === "scraper" ? scrapeToken : tokens[as]}`
          const response = await fetch(`http://127.0.0.1:${address.port}${path}`, {
            method,
            headers,
            ...(options.body === undefined ? {} : { body: options.body }),
          })
          const text = await response.text()
          let tag: string | undefined
          try {
            tag = (JSON.parse(text) as { _tag?: string })._tag
          } catch {
            tag = undefined
          }
          return { status: response.status, tag }
        })
      return yield* body({
        tenant,
        runtime: Context.get(context, Runtime),
        send,
        inTenant: (effect) => Effect.provideService(effect, Tenant, tenant),
      })
    }),
  ).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.None)))

// --- provocations ----------------------------------------------------------------------------

type Provoke = (route: Route) => Effect.Effect<Answer, unknown, Stores.Stores>

interface Route {
  readonly method: string
  /** The path with its parameters filled in by `fill`. */
  readonly path: string
  /** A body the route accepts, when it takes one (absent, the route is sent none). */
  readonly body?: string
  /** Headers the route needs beyond the credential and the JSON media type. */
  readonly headers?: Record<string, string>
}

const json = { "content-type": "application/json" }

const headersOf = (route: Route) => ({ ...json, ...route.headers })

/** Sends `route` as `as` to a server with `fault`. */
const sent =
  (fault: Fault, as: Http.CallerName | "scraper" | undefined): Provoke =>
  (route) =>
    serving(fault, (s) =>
      s.send(route.method, route.path, {
        ...(as === undefined ? {} : { as }),
        headers: headersOf(route),
        ...(route.body === undefined ? {} : { body: route.body }),
      }),
    )

/** Every authenticated route: no credential, a caller the policy refuses, an authoriser that cannot decide. */
const guarded = (refused: Http.CallerName, allowed: Http.CallerName) => ({
  Unauthorized: sent({}, undefined),
  Forbidden: sent({}, refused),
  AuthorizerUnavailable: sent({ authorizer: "down" }, allowed),
})

/** Every route that reads a store: an outage is 503, damage is 500. */
const stored = (allowed: Http.CallerName) => ({
  Unavailable: sent({ stores: new BackendError({ detail: "lock_timeout: held elsewhere" }) }, allowed),
  Corrupt: sent({ stores: new Corrupt({ detail: "an unreadable row", seq: 0 }) }, allowed),
})

/** A declared length over the limit, refused before a byte is read. */
const tooLarge =
  (as: Http.CallerName): Provoke =>
  (route) =>
    serving({}, (s) => s.send(route.method, route.path, { as, headers: json, body: "x".repeat(MAX_BODY_BYTES + 1) }))

/** A body in a media type the route does not read. */
const wrongType =
  (as: Http.CallerName): Provoke =>
  (route) =>
    serving({}, (s) =>
      s.send(route.method, route.path, { as, headers: { "content-type": "text/plain" }, body: route.body ?? "x" }),
    )

/** `route` sent as `as` with `change` applied: a bad path, query or body. */
const invalid =
  (as: Http.CallerName, change: (route: Route) => Route): Provoke =>
  (route) => {
    const bad = change(route)
    return serving({}, (s) =>
      s.send(bad.method, bad.path, {
        as,
        headers: headersOf(bad),
        ...(bad.body === undefined ? {} : { body: bad.body }),
      }),
    )
  }

/** Runs `make` in a plain server's tenant, then sends the request it returns as `as`. */
const seeded =
  (as: Http.CallerName, make: (s: Served, route: Route) => Effect.Effect<Route, unknown, Stores.Stores>): Provoke =>
  (route) =>
    serving({}, (s) =>
      Effect.flatMap(make(s, route), (r) =>
        s.send(r.method, r.path, { as, headers: headersOf(r), ...(r.body === undefined ? {} : { body: r.body }) }),
      ),
    )

const openTask = (s: Served, shape: Parameters<typeof task>[0]) =>
  s.inTenant(Effect.flatMap(TaskStore, (store) => store.open(task(shape))))

const onTask =
  (shape: Parameters<typeof task>[0]) =>
  (s: Served, route: Route): Effect.Effect<Route, unknown, Stores.Stores> =>
    Effect.map(openTask(s, shape), (t) => ({ ...route, path: route.path.replace(UNKNOWN_TASK, t.id) }))

const UNKNOWN_TASK = `task_${"0".repeat(64)}`

/** A run of `quarantines`, sealed before the request. */
const sealedRun = (s: Served, route: Route) =>
  Effect.map(
    s.inTenant(Definitions.start(s.runtime, Definitions.quarantines, `INV-${randomBytes(4).toString("hex")}`)),
    (result) => ({ ...route, path: route.path.replace(/run_[0-9A-Z]+/, result.run) }),
  )

const startBody = (invoice: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ capability: Definitions.awaitsPayment.capability, input: { invoice }, ...extra })

/** A log with five runs integrated, then a sixth sealed after it; `path` is built from the runs. */
const withLog =
  (path: (runs: { readonly first: string; readonly late: string }) => string) =>
  (s: Served, route: Route): Effect.Effect<Route, unknown, Stores.Stores> =>
    s.inTenant(
      Effect.gen(function* () {
        const { key } = deploymentKey()
        const journal = yield* JournalStore
        const log = yield* LogStore
        const made = []
        for (let i = 0; i < 3; i++) made.push(yield* sealed(journal, i))
        yield* log.integrate(key, NOW, 10)
        const late = yield* sealed(journal, 3)
        return { ...route, path: path({ first: made[1]?.run ?? "", late: late.run }) }
      }),
    )

const badLimit = (route: Route): Route => ({ ...route, path: `${route.path}?limit=0` })
const badBody = (route: Route): Route => ({ ...route, body: JSON.stringify({ unknown: true }) })
const notJson = (route: Route): Route => ({ ...route, body: "{" })

/**
 * An error a route lists that this file cannot provoke from outside, named so the list of them is
 * pinned below. `POST /runs` answers `NotFound` when the run an admission key names has no
 * records left to show, which no request can arrange.
 */
const NOT_PROVOKED: Provoke = () => Effect.dieMessage("not provoked")

const RUN = generateRunId()
const CASE = "case_01JF8ZQ3R5T7V9X1B3D5F7H9KM"

/** Each route as sent (its parameters filled with ids nobody holds) and how to provoke each error it lists. */
const ROUTES: Record<string, { readonly route: Route; readonly errors: Record<string, Provoke> }> = {
  "GET /healthz": { route: { method: "GET", path: "/healthz" }, errors: {} },
  "GET /readyz": {
    route: { method: "GET", path: "/readyz" },
    errors: { NotReady: sent({ readiness: "down" }, undefined) },
  },
  "GET /metrics": { route: { method: "GET", path: "/metrics" }, errors: { Unauthorized: sent({}, "rita") } },
  "POST /events": {
    route: { method: "POST", path: "/events", body: JSON.stringify({ id: "e-1", kind: "invoice.paid" }) },
    errors: {
      ...guarded("rita", "pat"),
      ...stored("pat"),
      InvalidRequest: invalid("pat", notJson),
      PayloadTooLarge: tooLarge("pat"),
      UnsupportedMediaType: wrongType("pat"),
    },
  },
  "OPTIONS /events": {
    route: { method: "OPTIONS", path: "/events", headers: { "webhook-request-origin": "billing.example" } },
    errors: {
      ...guarded("rita", "pat"),
      // Without the origin header the handshake has nothing to answer.
      InvalidRequest: invalid("pat", ({ method, path }) => ({ method, path })),
    },
  },
  "GET /tasks": {
    route: { method: "GET", path: "/tasks" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), InvalidRequest: invalid("rita", badLimit) },
  },
  "GET /tasks/:task": {
    route: { method: "GET", path: `/tasks/${UNKNOWN_TASK}` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/tasks/nope" })),
      TaskNotFound: sent({}, "rita"),
    },
  },
  "POST /tasks/:task/claim": {
    route: { method: "POST", path: `/tasks/${UNKNOWN_TASK}/claim` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/tasks/nope/claim" })),
      PayloadTooLarge: tooLarge("rita"),
      TaskNotFound: sent({}, "rita"),
      Excluded: seeded("rita", onTask({ excludedActors: ["rita"] })),
      WrongRole: seeded("rita", onTask({ candidateRoles: ["legal"] })),
      NotPending: seeded("rita", onTask({ state: "completed" })),
      AlreadyClaimed: seeded("rita", onTask({ state: "claimed", assignee: "sam" })),
    },
  },
  "POST /tasks/:task/release": {
    route: { method: "POST", path: `/tasks/${UNKNOWN_TASK}/release` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/tasks/nope/release" })),
      PayloadTooLarge: tooLarge("rita"),
      TaskNotFound: sent({}, "rita"),
      NotHeld: seeded("rita", onTask({})),
    },
  },
  "POST /tasks/:task/takeover": {
    route: { method: "POST", path: `/tasks/${UNKNOWN_TASK}/takeover`, body: JSON.stringify({ from: "sam" }) },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", badBody),
      PayloadTooLarge: tooLarge("rita"),
      UnsupportedMediaType: wrongType("rita"),
      TaskNotFound: sent({}, "rita"),
      Excluded: seeded("rita", onTask({ state: "claimed", assignee: "sam", excludedActors: ["rita"] })),
      WrongRole: seeded("rita", onTask({ state: "claimed", assignee: "sam", candidateRoles: ["legal"] })),
      NotPending: seeded("rita", onTask({ state: "completed", assignee: "sam" })),
      NotHeld: seeded("rita", onTask({})),
    },
  },
  "POST /tasks/:task/decide": {
    route: {
      method: "POST",
      path: `/tasks/${UNKNOWN_TASK}/decide`,
      body: JSON.stringify({ approved: true, reason: "checked" }),
    },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", badBody),
      PayloadTooLarge: tooLarge("rita"),
      UnsupportedMediaType: wrongType("rita"),
      TaskNotFound: sent({}, "rita"),
      Excluded: seeded("rita", onTask({ excludedActors: ["rita"] })),
      WrongRole: seeded("rita", onTask({ candidateRoles: ["legal"] })),
      NotPending: seeded("rita", onTask({ state: "completed" })),
      AlreadyClaimed: seeded("rita", onTask({ state: "claimed", assignee: "sam" })),
    },
  },
  "GET /cases": {
    route: { method: "GET", path: "/cases" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), InvalidRequest: invalid("rita", badLimit) },
  },
  "GET /cases/:case": {
    route: { method: "GET", path: `/cases/${CASE}` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/cases/nope" })),
      NotFound: sent({}, "rita"),
    },
  },
  "GET /obligations": {
    route: { method: "GET", path: "/obligations" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), InvalidRequest: invalid("rita", badLimit) },
  },
  "GET /runs": {
    route: { method: "GET", path: "/runs" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), InvalidRequest: invalid("rita", badLimit) },
  },
  "POST /runs": {
    route: { method: "POST", path: "/runs", body: startBody("INV-start") },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({
        ...r,
        body: JSON.stringify({ capability: "no.such.run", input: {} }),
      })),
      PayloadTooLarge: tooLarge("rita"),
      UnsupportedMediaType: wrongType("rita"),
      AdmissionRefused: seeded("rita", (s, r) =>
        Effect.as(s.inTenant(Effect.flatMap(QuotaStore, (q) => q.setHalt(Option.some("incident")))), r),
      ),
      AdmissionConflict: seeded("rita", (s, r) =>
        Effect.as(
          s.send("POST", "/runs", { as: "rita", headers: json, body: startBody("INV-a", { admissionKey: "k-1" }) }),
          { ...r, body: startBody("INV-b", { admissionKey: "k-1" }) },
        ),
      ),
      NotFound: NOT_PROVOKED,
    },
  },
  "GET /runs/:run": {
    route: { method: "GET", path: `/runs/${RUN}` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/runs/nope" })),
      NotFound: sent({}, "rita"),
    },
  },
  "POST /runs/:run/cancel": {
    route: { method: "POST", path: `/runs/${RUN}/cancel`, body: JSON.stringify({ reason: "wrong invoice" }) },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", badBody),
      PayloadTooLarge: tooLarge("rita"),
      UnsupportedMediaType: wrongType("rita"),
      NotFound: sent({}, "rita"),
      RunClosed: seeded("rita", sealedRun),
    },
  },
  "GET /runs/:run/journal": {
    route: { method: "GET", path: `/runs/${RUN}/journal` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", badLimit),
      NotFound: sent({}, "rita"),
    },
  },
  "GET /log/checkpoint": {
    route: { method: "GET", path: "/log/checkpoint" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), NotFound: sent({}, "rita") },
  },
  "GET /log/inclusion": {
    route: { method: "GET", path: `/log/inclusion?run=${RUN}` },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", (r) => ({ ...r, path: "/log/inclusion?run=nope" })),
      // No checkpoint yet, and no size given: the latest size is unknown.
      NotFound: sent({}, "rita"),
      RunNotLogged: seeded(
        "rita",
        withLog(() => `/log/inclusion?run=${RUN}`),
      ),
      RunNotIntegrated: seeded(
        "rita",
        withLog(({ late }) => `/log/inclusion?run=${late}`),
      ),
      SizeBeyondLog: seeded(
        "rita",
        withLog(({ first }) => `/log/inclusion?run=${first}&size=9`),
      ),
      RunOutsideSize: seeded(
        "rita",
        withLog(({ first }) => `/log/inclusion?run=${first}&size=1`),
      ),
    },
  },
  "GET /log/consistency": {
    route: { method: "GET", path: "/log/consistency?from=1" },
    errors: {
      ...guarded("pat", "rita"),
      ...stored("rita"),
      InvalidRequest: invalid("rita", () => ({ method: "GET", path: "/log/consistency?from=x" })),
      NotFound: sent({}, "rita"),
      SizesUnordered: seeded(
        "rita",
        withLog(() => "/log/consistency?from=3&to=2"),
      ),
      SizeBeyondLog: seeded(
        "rita",
        withLog(() => "/log/consistency?from=1&to=9"),
      ),
    },
  },
  "GET /dead-letters": {
    route: { method: "GET", path: "/dead-letters" },
    errors: { ...guarded("pat", "rita"), ...stored("rita"), InvalidRequest: invalid("rita", badLimit) },
  },
  "GET /census": {
    route: { method: "GET", path: "/census" },
    errors: { ...guarded("pat", "rita"), ...stored("rita") },
  },
  "PUT /admin/halt": {
    route: { method: "PUT", path: "/admin/halt", body: JSON.stringify({ reason: "incident" }) },
    errors: {
      ...guarded("rita", "ada"),
      Unavailable: stored("ada").Unavailable,
      InvalidRequest: invalid("ada", notJson),
      PayloadTooLarge: tooLarge("ada"),
      UnsupportedMediaType: wrongType("ada"),
    },
  },
  "DELETE /admin/halt": {
    route: { method: "DELETE", path: "/admin/halt" },
    errors: { ...guarded("rita", "ada"), Unavailable: stored("ada").Unavailable, PayloadTooLarge: tooLarge("ada") },
  },
  "GET /policy": { route: { method: "GET", path: "/policy" }, errors: guarded("rita", "ada") },
}

describe("route errors, served", () => {
  const routes = documented()

  plain("every route of the document has its provocations here, and no other", () => {
    assert.deepStrictEqual(Object.keys(ROUTES).sort(), [...routes.keys()].sort())
    for (const [name, tags] of routes)
      assert.deepStrictEqual(Object.keys(ROUTES[name]?.errors ?? {}).sort(), [...tags.keys()].sort(), name)
  })

  plain("the errors not provoked here are exactly the ones named", () => {
    const skipped = Object.entries(ROUTES).flatMap(([name, { errors }]) =>
      Object.entries(errors)
        .filter(([, provoke]) => provoke === NOT_PROVOKED)
        .map(([tag]) => `${name} ${tag}`),
    )
    assert.deepStrictEqual(skipped, ["POST /runs NotFound"])
  })

  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    for (const [name, { route, errors }] of Object.entries(ROUTES)) {
      it.effect(`${name} answers each error it lists with its status and tag`, () =>
        Effect.forEach(
          Object.entries(errors).filter(([, provoke]) => provoke !== NOT_PROVOKED),
          ([tag, provoke]) =>
            Effect.map(provoke(route), (answer) =>
              assert.deepStrictEqual([answer.status, answer.tag], [routes.get(name)?.get(tag), tag], `${name} ${tag}`),
            ),
          { discard: true },
        ),
      )
    }
  })
})
