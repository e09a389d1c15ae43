/**
 * The operator HTTP server (§8): the `Api`, its handlers, bearer authentication from the
 * credential table, the OpenAPI document at `/openapi.json` and a browsable page at `/docs`, on
 * Node's HTTP server. Closing the layer's scope stops accepting connections and lets requests in
 * flight finish (the Node server layer's finaliser).
 *
 * Refusals the platform would otherwise answer its own way are made §8.2's here: a request that
 * fails its schema is 422 (the platform says 400), malformed JSON is 422 (the platform dies, 500),
 * a body over 1 MiB is 413 before any of it is read into a store, and every body is read through
 * `Body.strict`: a charset other than UTF-8 is 415, bytes that are not UTF-8 and JSON with a
 * duplicated key, a lone surrogate or too deep a nesting are 422.
 */
import { createServer } from "node:http"
import {
  HttpApiBuilder,
  HttpMethod,
  HttpServer,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse,
} from "@effect/platform"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import { NodeHttpServer } from "@effect/platform-node"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Effect, Layer, Option } from "effect"
import * as Calendar from "../domain/Calendar.js"
import type * as Digest from "../domain/Digest.js"
import type * as LogKey from "../domain/LogKey.js"
import * as RunDefinition from "../runtime/RunDefinition.js"
import * as Runtime from "../runtime/Runtime.js"
import type * as Stores from "../services/Stores.js"
import { Api, InvalidRequest, MAX_BODY_BYTES, PayloadTooLarge, type UnsupportedMediaType } from "./Api.js"
import * as Authentication from "./Authentication.js"
import type { Authorizer } from "./Authorizer.js"
import * as Body from "./Body.js"
import * as Console from "./Console.js"
import type { Credentials } from "./Credentials.js"
import * as Docs from "./Docs.js"
import * as Admin from "./handlers/Admin.js"
import * as Cases from "./handlers/Cases.js"
import * as Events from "./handlers/Events.js"
import * as Health from "./handlers/Health.js"
import * as Log from "./handlers/Log.js"
import * as Operations from "./handlers/Operations.js"
import * as Policy from "./handlers/Policy.js"
import * as RunJournal from "./handlers/RunJournal.js"
import * as Runs from "./handlers/Runs.js"
import * as Tasks from "./handlers/Tasks.js"
import type * as Readiness from "./Readiness.js"
import * as RequestLog from "./RequestLog.js"
import type { RouteBundle } from "./RouteBundle.js"
import * as Routes from "./Routes.js"
import * as Scrape from "./Scrape.js"

export interface Options {
  /** The interface to listen on, e.g. `127.0.0.1`. */
  readonly host: string
  /** The port; 0 picks a free one (read it back from `HttpServer.HttpServer`'s `address`). */
  readonly port: number
  /**
   * The run definitions this process can start and resume, as `RunDefinition.register` layers
   * (merged); default none. A delivery that answers a run whose capability is not registered
   * here leaves the event claimed for it, for a process that registers it (§7.9 redelivery).
   */
  readonly definitions?: Layer.Layer<never, never, RunDefinition.Registry>
  /** The definitions `POST /runs` may start (each must be registered too); default none. */
  readonly startable?: ReadonlyArray<RunDefinition.Any>
  /** The runtime's options (lease owner, TTL, `wakeConcurrency` for runs resumed in the background). */
  readonly runtime?: Runtime.Options
  /**
   * What `GET /readyz` probes: `Readiness.layerSqlite(file)` or `Readiness.layerPg(url)` for the
   * store the server runs on. Required, so that no server answers "ready" without having looked.
   */
  readonly readiness: Layer.Layer<Readiness.Readiness>
  /** Digests of the scrape tokens `/metrics` takes (`Scrape.ts`); default none, and nobody may scrape. */
  readonly scrapeDigests?: ReadonlyArray<Digest.Digest>
  /** Label the metrics by tenant (the census gauges and the request counter); default off. */
  readonly metricTenant?: boolean
  /** Whether `/docs` and `/openapi.json` need a credential (`Docs.ts`); default public. */
  readonly docs?: Docs.Options
  /** Serve the console at `/console` (`Console.ts`); default true. */
  readonly console?: boolean
  /** The key the log is signed with (`--log-key`): `GET /log/checkpoint` signs an empty log's size-0 checkpoint with it; default none. */
  readonly logKey?: LogKey.LogKey
}

/** Every group's handlers. */
export const handlers = Layer.mergeAll(
  Health.layer,
  Events.layer,
  Tasks.layer,
  Cases.layer,
  Runs.layer,
  RunJournal.layer,
  Log.layer,
  Operations.layer,
  Admin.layer,
  Policy.layer,
)

/** The API with its handlers, authenticated from the credential table (`/metrics` by the scrape credential). */
export const api = HttpApiBuilder.api(Api).pipe(
  Layer.provide(handlers),
  Layer.provide(Layer.merge(Authentication.layer, Scrape.layer)),
)

const withConsole = [...Routes.table, ...Console.routes]

/** §8.2's refusals for what the platform answers otherwise; see the module comment. */
export const refusals = HttpApiBuilder.middleware(Api, (app) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    // Refused on the declared length, before reading: reading past the limit makes the platform
    // destroy the socket, and the client would see a reset instead of the 413.
    // Only a method that carries a body: a GET is never read, so the document lists no 413 there.
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES && HttpMethod.hasBody(request.method)) return yield* tooLarge
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    // Node keeps the first of two Authorization headers and drops the second: which credential
    // the client meant is unknowable, so neither is served.
    if (countHeader(incoming.rawHeaders, "authorization") > 1) return ambiguousCredential
    // Every route reads its body through `Body.strict`: size, media type, charset, UTF-8 and
    // strict JSON. `/events` reads CloudEvents in binary mode, whose body is data in any media type.
    const template = Routes.templateOf(request.method, request.url, withConsole)
    // What the route table does not match is no route, even where the router would reach a
    // handler with an empty parameter (`/runs/`). The console's routes pass on to the router,
    // which serves them when the console is on and answers them as no route when it is off.
    if (template === undefined) return Routes.unrouted(request.method, request.url)
    const jsonOnly = template !== "/events"
    return yield* Effect.provideService(
      app,
      HttpServerRequest.HttpServerRequest,
      Body.strict(request, incoming, { jsonOnly }),
    )
  }).pipe(Effect.catchAllCause((cause) => refine(cause))),
)

/**
 * The server over a runtime the caller supplies: `POST /events` and `decide` deliver through
 * `Runtime.deliver` / `answerTask`, so a delivery that answers a wait resumes its run.
 */
export const layerWith = (
  options: Options,
): Layer.Layer<
  HttpServer.HttpServer,
  HttpServerError.ServeError,
  Stores.Stores | Credentials | Authorizer | RouteBundle | Runtime.Runtime
> =>
  // `HttpApiBuilder.serve(middleware)` would apply the request log after the platform has sent
  // the response, too late to answer 404/405 or add headers, so the app is wrapped here instead.
  HttpApiBuilder.httpApp
    .pipe(
      Effect.map((app) =>
        HttpServer.serve(
          RequestLog.middleware({
            metricTenant: options.metricTenant ?? false,
            routes: options.console === false ? Routes.table : [...Routes.table, ...Console.routes],
          })(app),
        ),
      ),
      Layer.unwrapEffect,
      Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]),
    )
    .pipe(
      Layer.provide(Docs.layer(options.docs)),
      Layer.provide(options.console === false ? Layer.empty : Console.layer),
      Layer.provide(refusals),
      Layer.provide(
        Layer.provide(
          api,
          Layer.mergeAll(
            Layer.succeed(Runs.Startable, Runs.startable(options.startable ?? [])),
            options.readiness,
            Scrape.layerDigests(options.scrapeDigests ?? []),
            Layer.succeed(Health.MetricTenant, options.metricTenant ?? false),
            Layer.succeed(Log.Signing, Option.fromNullable(options.logKey)),
          ),
        ),
      ),
      // Read when the router is built, so it must be in place before `serve` builds the app.
      Layer.provide(Routes.layerRouterConfig),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { host: options.host, port: options.port })),
    )

/**
 * The runtime a server drives: over the stores, with the wall clock's calendar and the
 * definitions of `options`. A run a delivery resumes is driven in a background fiber of this
 * layer (at most `wakeConcurrency` at once), never inside the request: the request answers
 * `resumed` once the answer is journaled. Closing the layer's scope interrupts those fibers; a
 * run interrupted that way keeps its lease until the TTL, then the sweeper's recovery pass (§7.10
 * pass 1) resumes it from its journal, here or in another instance.
 */
export const layerRuntime = (
  options: Pick<Options, "definitions" | "runtime">,
): Layer.Layer<Runtime.Runtime, never, Stores.Stores> =>
  Layer.merge(Runtime.layer(options.runtime), options.definitions ?? Layer.empty).pipe(
    Layer.provide(Layer.merge(RunDefinition.layerRegistry, Calendar.layerWallClock)),
  )

/** The server with its runtime (`layerRuntime`); the runtime is in the output too, for the process to start runs and sweep with. */
export const layer = (
  options: Options,
): Layer.Layer<
  HttpServer.HttpServer | Runtime.Runtime,
  HttpServerError.ServeError,
  Stores.Stores | Credentials | Authorizer | RouteBundle
> => layerWith(options).pipe(Layer.provideMerge(layerRuntime(options)))

// internal

/** 400 with a tagged body: the API's own error list keeps 400 for nothing (`ApiDocument`). */
const ambiguousCredential = HttpServerResponse.unsafeJson(
  {
    _tag: "AmbiguousCredential",
    message: "the request carries more than one Authorization header; send exactly one",
  },
  { status: 400 },
)

const countHeader = (raw: ReadonlyArray<string>, name: string): number => {
  let n = 0
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) n++
  return n
}

const tooLarge = new PayloadTooLarge({ limit: MAX_BODY_BYTES, message: `the body exceeds ${MAX_BODY_BYTES} bytes` })

// The app's error type says `never`, but its failures are the API's errors, hence the widening.
const refine = <E>(
  cause: Cause.Cause<E>,
): Effect.Effect<never, E | InvalidRequest | PayloadTooLarge | UnsupportedMediaType> => {
  const failure = Cause.failureOption(cause as Cause.Cause<unknown>)
  if (Option.isSome(failure) && failure.value instanceof HttpApiDecodeError) {
    const message = failure.value.issues
      .map((issue) => `${issue.path.length === 0 ? "request" : issue.path.join(".")}: ${issue.message}`)
      .join("; ")
    return Effect.fail(new InvalidRequest({ message }))
  }
  // The platform reads a JSON body with `orDie`, so malformed JSON and an overlong body arrive
  // as defects.
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect) && Body.isRefusal(defect.value)) return Effect.fail(defect.value)
  if (Option.isSome(defect) && HttpServerError.isServerError(defect.value)) {
    const error = defect.value
    if (error._tag === "RequestError" && error.reason === "Decode") {
      // Never a size: `Body.strict` reads every body and raises its own tagged `PayloadTooLarge`,
      // so a platform decode failure is told apart by its tag and reason, never by its text.
      const detail = error.cause instanceof Error ? error.cause.message : String(error.cause)
      return Effect.fail(new InvalidRequest({ message: `body: not JSON: ${detail}` }))
    }
  }
  return Effect.failCause(cause)
}
