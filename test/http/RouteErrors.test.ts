/**
 * Issue 49 item 3: each route declares the few errors it can answer with, each at one status.
 * The `Api`'s endpoints are the declaration (a handler failing with an error its endpoint does not
 * declare does not typecheck); this pins what they declare, route by route, so a route that
 * grows a way to fail (or a tag that moves status) is a visible change here. The body refusals
 * every route shares (`Server.refusals`) are checked apart.
 */
import { HttpApi } from "@effect/platform"
import { SchemaAST as AST, Option } from "effect"
import { describe, it } from "vitest"
import { Api } from "../../src/http/Api.js"
import { assert } from "../support/Assert.js"

/** The refusals `Server.refusals` may answer on any route, and the platform's 400 nobody sends. */
const SHARED: Record<string, number> = {
  HttpApiDecodeError: 400,
  InvalidRequest: 422,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
}

/** Route by route, the errors it answers with beyond the shared ones, and each one's status. */
const DECLARED: Record<string, Record<string, number>> = {
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
    NotFound: 404,
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

const tagsOf = (ast: AST.AST): ReadonlyArray<string> => {
  if (AST.isUnion(ast)) return ast.types.flatMap(tagsOf)
  const named = AST.getIdentifierAnnotation(ast)
  if (Option.isSome(named)) return [named.value]
  return AST.isTransformation(ast) ? tagsOf(ast.to) : [`<unnamed ${ast._tag}>`]
}

/** Every endpoint's errors as `tag -> statuses`, from the `Api` itself. */
const declared = (): Map<string, Map<string, Array<number>>> => {
  const routes = new Map<string, Map<string, Array<number>>>()
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors }) => {
      const tags = new Map<string, Array<number>>()
      for (const [status, error] of errors)
        for (const tag of Option.match(error.ast, { onNone: () => [], onSome: tagsOf }))
          tags.set(tag, [...(tags.get(tag) ?? []), status])
      routes.set(`${endpoint.method} ${endpoint.path}`, tags)
    },
  })
  return routes
}

describe("route errors", () => {
  it("every route's errors are the ones the table declares, each at exactly one status", () => {
    const routes = declared()
    assert.deepStrictEqual([...routes.keys()].sort(), Object.keys(DECLARED).sort())
    for (const [route, tags] of routes) {
      for (const [tag, statuses] of tags) assert.strictEqual(statuses.length, 1, `${route}: ${tag} at ${statuses}`)
      const own = Object.fromEntries(
        [...tags].filter(([tag, [status]]) => SHARED[tag] !== status).map(([tag, [status]]) => [tag, status as number]),
      )
      assert.deepStrictEqual(own, DECLARED[route], route)
      for (const [tag, status] of Object.entries(SHARED)) assert.deepStrictEqual(tags.get(tag), [status], route)
    }
  })

  it("a tag means one status on every route that declares it", () => {
    const seen = new Map<string, Set<number>>()
    for (const tags of declared().values())
      for (const [tag, statuses] of tags) for (const s of statuses) seen.set(tag, (seen.get(tag) ?? new Set()).add(s))
    for (const [tag, statuses] of seen) assert.strictEqual(statuses.size, 1, `${tag}: ${[...statuses]}`)
  })
})
