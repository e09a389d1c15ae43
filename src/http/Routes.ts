/**
 * The server's route table, read from the `Api` (plus the two documentation routes served beside
 * it), and the answers for requests that match none of it: an unknown path is a tagged 404, a
 * known path under another method is a tagged 405 with `Allow` (RFC 9110 §15.5.6). The router is
 * configured to match exactly what the table says, so a path rule in a front proxy means what it
 * says: case-sensitive (`/Metrics` is not `/metrics`), no collapsing of `//` (`//metrics` is not
 * `/metrics`), no trailing-slash aliases, and a path parameter of at most `MAX_SEGMENT` characters.
 *
 * The table is also where a request's route template comes from (`/tasks/:task`), which is what
 * logs and the latency histogram are labelled with: a template is one of a fixed set, a raw path
 * would let every client mint label values.
 */
import { HttpApi, HttpRouter, HttpServerResponse } from "@effect/platform"
import { type Layer, Schema } from "effect"
import { Api } from "./Api.js"

/**
 * The longest path parameter the router accepts (its own default). Every id of the API is far
 * shorter; a longer segment is answered 404 like any unknown path, before any handler decodes it.
 */
export const MAX_SEGMENT = 100

/** No route has this path (under any method). */
export class NoSuchRoute extends Schema.TaggedError<NoSuchRoute>()("NoSuchRoute", { message: Schema.String }) {}

/** The path is a route, but not for this method; `allow` lists the methods it has. */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  allow: Schema.Array(Schema.String),
  message: Schema.String,
}) {}

/** The router's matching rules; see the module comment. */
export const layerRouterConfig: Layer.Layer<never> = HttpRouter.setRouterConfig({
  caseSensitive: true,
  ignoreDuplicateSlashes: false,
  ignoreTrailingSlash: false,
  maxParamLength: MAX_SEGMENT,
})

export interface Route {
  readonly method: string
  /** The template as declared, e.g. `/tasks/:task`. */
  readonly path: string
}

/** Every route the server answers: the `Api`'s endpoints, then `/openapi.json` and `/docs`. */
export const table: ReadonlyArray<Route> = (() => {
  const routes: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => routes.push({ method: endpoint.method, path: endpoint.path }),
  })
  routes.push({ method: "GET", path: "/openapi.json" }, { method: "GET", path: "/docs" })
  return routes
})()

/** The template of the route `method path` is served by, if any (`HEAD` is served by `GET`, as the router does). */
export const templateOf = (method: string, url: string, routes: ReadonlyArray<Route> = table): string | undefined => {
  const segments = pathOf(url).split("/")
  const wanted = method === "HEAD" ? ["HEAD", "GET"] : [method]
  return routes.find((route) => wanted.includes(route.method) && matches(route.path, segments))?.path
}

/** The methods some route serves `url` under, in table order, each once (with `HEAD` where `GET` is). */
export const methodsOf = (url: string, routes: ReadonlyArray<Route> = table): ReadonlyArray<string> => {
  const segments = pathOf(url).split("/")
  const methods: Array<string> = []
  for (const route of routes) {
    if (!matches(route.path, segments)) continue
    for (const m of route.method === "GET" ? ["GET", "HEAD"] : [route.method]) {
      if (!methods.includes(m)) methods.push(m)
    }
  }
  return methods
}

/** The answer to a request the router found no route for: 405 with `Allow` when the path has other methods, else 404. */
export const unrouted = (
  method: string,
  url: string,
  routes: ReadonlyArray<Route> = table,
): HttpServerResponse.HttpServerResponse => {
  const allow = methodsOf(url, routes)
  if (allow.length > 0) {
    return HttpServerResponse.unsafeJson(
      Schema.encodeSync(MethodNotAllowed)(
        new MethodNotAllowed({ allow, message: `${method} is not allowed here; allowed: ${allow.join(", ")}` }),
      ),
      { status: 405, headers: { allow: allow.join(", ") } },
    )
  }
  return HttpServerResponse.unsafeJson(
    Schema.encodeSync(NoSuchRoute)(
      new NoSuchRoute({ message: "no such route; GET /openapi.json lists them (paths are case-sensitive)" }),
    ),
    { status: 404 },
  )
}

// internal

const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/**
 * Segment by segment, as the router is configured: literal segments exactly, a `:param` segment
 * of 1 to `MAX_SEGMENT` characters. The router lets a parameter be empty, so `/runs/` reached the
 * handler and was a 422 about a malformed id; `Server.refusals` answers what this table does not
 * match as no route, so a trailing slash is the 404 the README promises.
 */
const matches = (template: string, segments: ReadonlyArray<string>): boolean => {
  const parts = template.split("/")
  if (parts.length !== segments.length) return false
  return parts.every((part, i) => {
    const segment = segments[i] ?? ""
    return part.startsWith(":") ? segment.length >= 1 && segment.length <= MAX_SEGMENT : part === segment
  })
}
