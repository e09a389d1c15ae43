/**
 * What the server tells its operator about each request: one structured log line per request
 * (`agentplane.http.request`: method, route template, status, latency, tenant, actor, request
 * id), every 5xx and every defect logged at `Error` with its cause, and the request metrics
 * (`agentplane.http.requests` by method and status, `agentplane.http.request.duration` by method
 * and route). It is also where the edges of the HTTP contract are kept: a request no route serves
 * is a tagged 404 or 405 (`Routes.unrouted`), a 401 says `WWW-Authenticate: Bearer`, a defect is a
 * tagged 500 that names the request id and nothing of the cause, and every answer carries
 * `x-request-id`.
 *
 * Logs are JSON lines through Effect's `Logger` (`layerLogger`), at a minimum level the operator
 * picks (`--log-level`, `AGENTPLANE_LOG_LEVEL`).
 */
import { randomUUID } from "node:crypto"
import { type HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Effect, Exit, Layer, Logger, LogLevel, Metric, Option, Ref, Schema } from "effect"
import type { Caller } from "./Caller.js"
import * as Metrics from "./Metrics.js"
import * as Routes from "./Routes.js"
import { SeenCaller } from "./SeenCaller.js"

/** The levels `--log-level` takes, lowest first; `none` logs nothing. */
export const Level = Schema.Literal("trace", "debug", "info", "warning", "error", "fatal", "none")
export type Level = typeof Level.Type

/** The level when neither the flag nor the environment names one. */
export const DEFAULT_LEVEL: Level = "info"

/**
 * JSON lines (Effect's `Logger.jsonLogger`: `message`, `logLevel`, `timestamp`, `cause`,
 * `annotations`, `spans`, `fiberId`) at `level` and above, each handed to `write` (by default
 * standard output, one line each), in place of the default logger.
 */
export const layerLogger = (options: {
  readonly level: Level
  readonly write?: (line: string) => void
}): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.replace(Logger.defaultLogger, Logger.map(Logger.jsonLogger, options.write ?? writeStdout)),
    // `NodeRuntime.runMain` adds the pretty logger beside the default one: off, or every line twice.
    Logger.remove(Logger.prettyLoggerDefault),
    Logger.minimumLogLevel(LEVELS[options.level]),
  )

export interface Options {
  /** Label the request counter by tenant too (`--metric-tenant`); the histogram never is. */
  readonly metricTenant: boolean
  /** The routes served beside the API's (`Routes.table` by default), for route labels and 404/405. */
  readonly routes?: ReadonlyArray<Routes.Route>
}

/** Wraps the whole app: see the module comment. */
export const middleware =
  (options: Options) =>
  <R>(app: HttpApp.Default<never, R>): HttpApp.Default<never, R> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const requestId = requestIdOf(request.headers["x-request-id"])
      const callerRef = yield* Ref.make(Option.none<Caller>())
      const started = yield* Clock.currentTimeNanos
      const method = METHODS.has(request.method) ? request.method : "OTHER"
      const route = Routes.templateOf(request.method, request.url, options.routes) ?? "unmatched"
      const annotations = { requestId, method, route }
      const exit = yield* app.pipe(
        Effect.provideService(SeenCaller, callerRef),
        Effect.annotateLogs(annotations),
        Effect.exit,
      )
      const answered = Exit.isSuccess(exit)
        ? { response: exit.value, cause: Option.none<Cause.Cause<unknown>>() }
        : yield* fromCause(exit.cause, request, requestId, options.routes)
      const response = decorate(answered.response, requestId)
      const seconds = Number((yield* Clock.currentTimeNanos) - started) / 1e9
      const caller = yield* Ref.get(callerRef)
      const status = response.status
      const line = {
        ...annotations,
        status,
        latencySeconds: seconds,
        tenant: Option.match(caller, { onNone: () => null, onSome: (c) => c.tenant }),
        actor: Option.match(caller, { onNone: () => null, onSome: (c) => c.actor }),
      }
      const log = Option.match(answered.cause, {
        // The defect's cause goes on the request's own line, so one line holds the request and its failure.
        onSome: (cause) => Effect.logError(MESSAGE, cause),
        onNone: () =>
          status >= 500
            ? Effect.annotateLogs(Effect.logError(MESSAGE), "error", errorDetail(response))
            : Effect.logInfo(MESSAGE),
      })
      yield* Effect.annotateLogs(log, line)
      const counted = Metric.tagged(Metric.tagged(Metrics.httpRequests, "method", method), "status", String(status))
      yield* Metric.increment(
        options.metricTenant
          ? Metric.tagged(counted, "tenant", Option.match(caller, { onNone: () => "none", onSome: (c) => c.tenant }))
          : counted,
      )
      yield* Metric.update(
        Metric.tagged(Metric.tagged(Metrics.httpRequestDuration, "method", method), "route", route),
        seconds,
      )
      return response
    })

// internal

const MESSAGE = "agentplane.http.request"

const LEVELS: Readonly<Record<Level, LogLevel.LogLevel>> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
}

const writeStdout = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

/** A method outside the fixed list would let a client mint label values. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/**
 * The client's own id when it is short and plain (a proxy's, so its logs and ours join), else a
 * fresh one: a header is the client's text, and an unbounded or odd one would go into every line.
 */
const requestIdOf = (header: string | undefined): string =>
  header !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(header) ? header : randomUUID()

/** The response for a request that did not produce one: routing misses, defects, interruption. */
const fromCause = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  routes: ReadonlyArray<Routes.Route> | undefined,
): Effect.Effect<{ response: HttpServerResponse.HttpServerResponse; cause: Option.Option<Cause.Cause<unknown>> }> => {
  const failure = Cause.failureOption(cause)
  if (
    Option.isSome(failure) &&
    HttpServerError.isServerError(failure.value) &&
    failure.value._tag === "RouteNotFound"
  ) {
    return Effect.succeed({ response: Routes.unrouted(request.method, request.url, routes), cause: Option.none() })
  }
  if (Cause.isInterruptedOnly(cause)) {
    // The client went away (or the server is stopping); the platform's status for it.
    return Effect.map(HttpServerError.causeResponse(cause), ([response]) => ({ response, cause: Option.none() }))
  }
  return Effect.succeed({
    response: HttpServerResponse.unsafeJson(
      { _tag: "InternalError", requestId, message: `the server failed; its log has the cause under ${requestId}` },
      { status: 500 },
    ),
    cause: Option.some(cause),
  })
}

const decorate = (response: HttpServerResponse.HttpServerResponse, requestId: string) => {
  const withId = HttpServerResponse.setHeader(response, "x-request-id", requestId)
  // RFC 9110 §11.6.1: a 401 names the scheme the client should use.
  return response.status === 401
    ? HttpServerResponse.setHeader(withId, "www-authenticate", 'Bearer realm="agentplane"')
    : withId
}

/** An encoded error body (a tagged JSON error, at most a few KiB) as the 5xx line's detail. */
const errorDetail = (response: HttpServerResponse.HttpServerResponse): unknown => {
  const body = response.body
  if (body._tag !== "Uint8Array" || body.body.byteLength > 4096) return null
  try {
    return JSON.parse(new TextDecoder().decode(body.body))
  } catch {
    return null
  }
}
