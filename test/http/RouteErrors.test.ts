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
import { DECLARED, documented, SHARED } from "./RouteErrorTable.js"

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

  it("the OpenAPI document lists, per operation, exactly the route's declared errors at their statuses", () => {
    const routes = documented()
    assert.deepStrictEqual([...routes.keys()].sort(), Object.keys(DECLARED).sort())
    for (const [route, tags] of routes) {
      const own = Object.fromEntries([...tags].filter(([tag]) => SHARED[tag] === undefined))
      assert.deepStrictEqual(own, DECLARED[route], route)
      // A shared refusal is listed only where it can happen (`ApiDocument.document`), but always at its status.
      for (const [tag, status] of tags) if (SHARED[tag] !== undefined) assert.strictEqual(status, SHARED[tag], route)
      // The 400 the platform lists is never sent (`Server.refusals` answers 422), so it is gone.
      assert.isFalse(tags.has("HttpApiDecodeError"), route)
    }
  })
})
