/**
 * A real operator server on 127.0.0.1 (ephemeral port) over a test backend, with the real
 * credential table and the Cedar route policy (`RoutePolicy`), and clients derived from the
 * `Api`. Each `withServer` call gets two fresh tenants, so no test sees another's rows.
 */
import { randomBytes } from "node:crypto"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Logger, LogLevel, type Scope } from "effect"
import { inject } from "vitest"
import type { Tenant, TenantId } from "../../src/domain/Tenant.js"
import { Tenant as TenantTag } from "../../src/domain/Tenant.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import { Api } from "../../src/http/Api.js"
import * as Credentials from "../../src/http/Credentials.js"
import * as Readiness from "../../src/http/Readiness.js"
import * as Server from "../../src/http/Server.js"
import * as RunDefinition from "../../src/runtime/RunDefinition.js"
import { Runtime } from "../../src/runtime/Runtime.js"
import * as PolicyEngine from "../../src/services/PolicyEngine.js"
import type * as Stores from "../../src/services/Stores.js"
import * as Backend from "./Backend.js"
import * as RoutePolicy from "./RoutePolicy.js"

/** Both backends, each test file running its suite on each. */
export const backends = (): ReadonlyArray<Backend.Backend> => [Backend.sqlite(), Backend.postgres(inject("pgUrl"))]

/** The callers of a test server: four in tenant A, one (with every role) in tenant B. */
export const callers = {
  rita: { tenant: "a", roles: ["reviewer", "finance"] },
  sam: { tenant: "a", roles: ["reviewer"] },
  ada: { tenant: "a", roles: ["admin", "reviewer", "producer"] },
  pat: { tenant: "a", roles: ["producer"] },
  nobody: { tenant: "a", roles: ["observer"] },
  bob: { tenant: "b", roles: ["admin", "reviewer", "producer"] },
} as const
export type CallerName = keyof typeof callers

const makeClient = (baseUrl: string, token: string | undefined) =>
  HttpApiClient.make(Api, {
    baseUrl,
    transformClient: (client) =>
      token === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(token)),
  }).pipe(Effect.provide(FetchHttpClient.layer))

export type Client = Effect.Effect.Success<ReturnType<typeof makeClient>>

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body as JSON; `undefined` when it is not JSON. */
  readonly json: unknown
}

export interface Fixture {
  readonly baseUrl: string
  /** Tenant A (rita, sam, ada, pat, nobody) and tenant B (bob). */
  readonly tenant: TenantId
  readonly otherTenant: TenantId
  readonly tokens: Readonly<Record<CallerName, string>>
  /** The server's own runtime: start runs with it (as a tenant, `inTenant`), and `idle` to wait for runs a request resumed. */
  readonly runtime: Runtime["Type"]
  /** The derived client authenticated as `name`; `as(undefined)` sends no credential. */
  readonly as: (name: CallerName | undefined) => Client
  /** A client with a token the table does not know. */
  readonly stranger: Client
  /** The operator's scrape token (`/metrics`), which is no tenant's credential, and a client sending it. */
  readonly scrapeToken: string
  readonly scraper: Client
  /** A request outside the derived client, for bodies it would never send. */
  readonly raw: (
    method: string,
    path: string,
    options?: {
      readonly as?: CallerName
      readonly headers?: Record<string, string>
      readonly body?: string | Uint8Array
    },
  ) => Effect.Effect<RawResponse>
  /** Runs a store effect as tenant A (or `tenant`). */
  readonly inTenant: <A, E, R>(
    effect: Effect.Effect<A, E, R>,
    tenant?: TenantId,
  ) => Effect.Effect<A, E, Exclude<R, Tenant>>
}

/**
 * Builds a server over `stores` (the test's own by default) for the duration of `body`, with
 * fresh tenants and tokens; the server closes when `body` ends.
 */
export const withServer = <A, E, R>(
  body: (fixture: Fixture) => Effect.Effect<A, E, R>,
  options: {
    readonly stores?: Layer.Layer<Stores.Stores, BackendError>
    /** Definitions the server's runtime registers (none by default). */
    readonly definitions?: ReadonlyArray<RunDefinition.Any>
    /** Whether `/docs` and `/openapi.json` need a credential (default public). */
    readonly docs?: Server.Options["docs"]
    /** What `/readyz` probes; by default always ready (the readiness tests pass a real probe). */
    readonly readiness?: Layer.Layer<Readiness.Readiness>
    /** `--metric-tenant`; off by default. */
    readonly metricTenant?: boolean
    /**
     * The logger the server (and `body`) run under; by default warnings and above only, so the
     * request log's info lines do not drown test output (the log tests pass a capturing one).
     */
    readonly log?: Layer.Layer<never>
    /** The engine deciding the runtime's effects (§7.12); every effect allowed by default. */
    readonly policy?: Layer.Layer<PolicyEngine.PolicyEngine>
    /** The key the server signs the log with (`--log-key`); none by default. */
    readonly logKey?: Server.Options["logKey"]
  } = {},
): Effect.Effect<A, E | BackendError | unknown, Exclude<R, Scope.Scope> | Stores.Stores> =>
  Effect.scoped(
    Effect.gen(function* () {
      const tenant = Backend.freshTenant()
      const otherTenant = Backend.freshTenant()
      const scrapeToken = `scrape-${randomBytes(16).toString("hex")}`
      const tokens = Object.fromEntries(
        Object.keys(callers).map((name) => [name, `tok-${randomBytes(16).toString("hex")}`]),
      ) as Record<CallerName, string>
      const entries = (Object.keys(callers) as Array<CallerName>).map((name) => ({
        digest: Credentials.digest(tokens[name]),
        tenant: callers[name].tenant === "a" ? tenant : otherTenant,
        actor: name,
        roles: [...callers[name].roles],
      }))
      // Test definitions need nothing beyond the step context.
      const definitions = (options.definitions ?? []).map(
        (def) => RunDefinition.register(def) as Layer.Layer<never, never, RunDefinition.Registry>,
      )
      const server = Server.layer({
        host: "127.0.0.1",
        port: 0,
        definitions: Layer.mergeAll(Layer.empty, ...definitions),
        readiness: options.readiness ?? Readiness.layerAlways,
        scrapeDigests: [Credentials.digest(scrapeToken)],
        metricTenant: options.metricTenant ?? false,
        ...(options.docs === undefined ? {} : { docs: options.docs }),
        ...(options.logKey === undefined ? {} : { logKey: options.logKey }),
      }).pipe(
        Layer.provide(Credentials.layerEntries(entries, "test")),
        Layer.provide(RoutePolicy.layer),
        // The runs the routes start are decided by a policy of their own (§7.12): all allowed unless the test gives one.
        Layer.provide(options.policy ?? PolicyEngine.allowAll),
        Layer.provide(options.stores ?? Layer.effectContext(Effect.context<Stores.Stores>())),
      )
      const context = yield* Layer.build(server)
      const address = Context.get(context, HttpServer.HttpServer).address
      if (address._tag !== "TcpAddress") return yield* Effect.dieMessage("expected a TCP address")
      const baseUrl = `http://127.0.0.1:${address.port}`
      const clients = new Map<string, Client>()
      for (const name of [...Object.keys(callers), undefined] as Array<CallerName | undefined>) {
        clients.set(name ?? "", yield* makeClient(baseUrl, name === undefined ? undefined : tokens[name]))
      }
      const stranger = yield* makeClient(baseUrl, `tok-${randomBytes(16).toString("hex")}`)
      const scraper = yield* makeClient(baseUrl, scrapeToken)
      const fixture: Fixture = {
        baseUrl,
        tenant,
        otherTenant,
        tokens,
        runtime: Context.get(context, Runtime),
        as: (name) => clients.get(name ?? "") as Client,
        stranger,
        scrapeToken,
        scraper,
        raw: (method, path, opts = {}) =>
          Effect.promise(async () => {
            const headers: Record<string, string> = { ...opts.headers }
            if (opts.as !== undefined) headers.authorization = `Bearer ${tokens[opts.as]}`
            const response = await fetch(`${baseUrl}${path}`, {
              method,
              headers,
              ...(opts.body === undefined ? {} : { body: opts.body }),
            })
            const text = await response.text()
            let json: unknown
            try {
              json = JSON.parse(text)
            } catch {
              json = undefined
            }
            return { status: response.status, headers: response.headers, text, json }
          }),
        inTenant: (effect, t = tenant) => Effect.provideService(effect, TenantTag, t),
      }
      return yield* body(fixture)
    }),
  ).pipe(Effect.provide(options.log ?? Logger.minimumLogLevel(LogLevel.Warning)))
