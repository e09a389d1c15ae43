/**
 * What each route declares it can answer with (issue 49 item 3), as one table the declaration
 * tests (`RouteErrors.test.ts`) and the served tests (`RouteErrorsServed.test.ts`) both read.
 */
import { OpenApi } from "@effect/platform"
import { Api } from "../../src/http/Api.js"

/** The refusals `Server.refusals` may answer on any route, and the platform's 400 nobody sends. */
export const SHARED: Record<string, number> = {
  HttpApiDecodeError: 400,
  InvalidRequest: 422,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
}

/** Route by route, the errors it answers with beyond the shared ones, and each one's status. */
export const DECLARED: Record<string, Record<string, number>> = {
  "GET /healthz": {},
  "GET /readyz": { NotReady: 503 },
  "GET /metrics": { Unauthorized: 401 },
  "POST /events": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unauthorized: 401, Unavailable: 503 },
  "OPTIONS /events": { Forbidden: 403, AuthorizerUnavailable: 500, Unauthorized: 401 },
  "GET /tasks": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unavailable: 503, Unauthorized: 401 },
  "GET /tasks/:task": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    TaskNotFound: 404,
  },
  "POST /tasks/:task/claim": {
    Forbidden: 403,
    Excluded: 403,
    WrongRole: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    TaskNotFound: 404,
    NotPending: 409,
    AlreadyClaimed: 409,
  },
  "POST /tasks/:task/release": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    TaskNotFound: 404,
    NotHeld: 409,
  },
  "POST /tasks/:task/takeover": {
    Forbidden: 403,
    Excluded: 403,
    WrongRole: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    TaskNotFound: 404,
    NotPending: 409,
    NotHeld: 409,
  },
  "POST /tasks/:task/decide": {
    Forbidden: 403,
    Excluded: 403,
    WrongRole: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    TaskNotFound: 404,
    NotPending: 409,
    AlreadyClaimed: 409,
  },
  "GET /cases": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unavailable: 503, Unauthorized: 401 },
  "GET /cases/:case": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
  },
  "GET /obligations": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unavailable: 503, Unauthorized: 401 },
  "GET /runs": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unavailable: 503, Unauthorized: 401 },
  "POST /runs": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
    AdmissionRefused: 429,
    AdmissionConflict: 409,
  },
  "GET /runs/:run": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
  },
  "POST /runs/:run/cancel": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
    RunClosed: 409,
  },
  "GET /runs/:run/journal": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
  },
  "GET /log/checkpoint": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
  },
  "GET /log/inclusion": {
    RunOutsideSize: 422,
    SizeBeyondLog: 422,
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    RunNotLogged: 404,
    NotFound: 404,
    RunNotIntegrated: 409,
  },
  "GET /log/consistency": {
    SizesUnordered: 422,
    SizeBeyondLog: 422,
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
    NotFound: 404,
  },
  "GET /dead-letters": {
    Forbidden: 403,
    AuthorizerUnavailable: 500,
    Corrupt: 500,
    Unavailable: 503,
    Unauthorized: 401,
  },
  "GET /census": { Forbidden: 403, AuthorizerUnavailable: 500, Corrupt: 500, Unavailable: 503, Unauthorized: 401 },
  "PUT /admin/halt": { Forbidden: 403, AuthorizerUnavailable: 500, Unavailable: 503, Unauthorized: 401 },
  "DELETE /admin/halt": { Forbidden: 403, AuthorizerUnavailable: 500, Unavailable: 503, Unauthorized: 401 },
  "GET /policy": { Forbidden: 403, AuthorizerUnavailable: 500, Unauthorized: 401 },
}

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, read by path.
type Doc = Record<string, any>

/** The tags one response's schema names: a `$ref` or an `anyOf` of them. */
const refsOf = (schema: Doc | undefined): ReadonlyArray<string> =>
  schema === undefined
    ? []
    : Array.isArray(schema.anyOf)
      ? schema.anyOf.flatMap(refsOf)
      : typeof schema.$ref === "string"
        ? [schema.$ref.split("/").pop() as string]
        : [`<inline ${JSON.stringify(schema).slice(0, 40)}>`]

/** Every operation of the document as `METHOD /path/:param -> tag -> status`, error statuses only. */
export const documented = (): Map<string, Map<string, number>> => {
  const doc = OpenApi.fromApi(Api) as Doc
  const routes = new Map<string, Map<string, number>>()
  for (const [path, item] of Object.entries<Doc>(doc.paths))
    for (const [method, operation] of Object.entries<Doc>(item)) {
      const tags = new Map<string, number>()
      for (const [status, response] of Object.entries<Doc>(operation.responses)) {
        if (Number(status) < 400) continue
        for (const tag of refsOf(response.content?.["application/json"]?.schema)) tags.set(tag, Number(status))
      }
      routes.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ":$1")}`, tags)
    }
  return routes
}
