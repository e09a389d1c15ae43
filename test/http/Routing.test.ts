/**
 * The edges of the HTTP contract (issue 17): a wrong method is 405 with `Allow`, an unknown path
 * or an over-long segment is a tagged 404, paths match exactly as written (case, `//`, trailing
 * `/`), a 401 names the Bearer scheme, and every error is a tagged JSON body. Routing touches no
 * store, so one backend (SQLite) is enough.
 */
import { describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Routes from "../../src/http/Routes.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

const tagged = (answer: Http.RawResponse, status: number, tag: string, what: string) => {
  assert.strictEqual(answer.status, status, `${what}: ${answer.text}`)
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/, what)
  assert.strictEqual((answer.json as { _tag?: unknown } | undefined)?._tag, tag, what)
}

describe("routing", () => {
  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    it.effect("a known path under another method is 405 MethodNotAllowed with Allow", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const health = yield* f.raw("DELETE", "/healthz")
          tagged(health, 405, "MethodNotAllowed", "DELETE /healthz")
          assert.strictEqual(health.headers.get("allow"), "GET, HEAD")
          assert.deepStrictEqual((health.json as { allow: unknown }).allow, ["GET", "HEAD"])
          const claim = yield* f.raw("GET", "/tasks/task_x/claim", { as: "rita" })
          tagged(claim, 405, "MethodNotAllowed", "GET /tasks/…/claim")
          assert.strictEqual(claim.headers.get("allow"), "POST")
          // One path, two methods: both listed.
          const halt = yield* f.raw("POST", "/admin/halt", { as: "ada" })
          tagged(halt, 405, "MethodNotAllowed", "POST /admin/halt")
          assert.strictEqual(halt.headers.get("allow"), "PUT, DELETE")
        }),
      ),
    )

    it.effect("unknown paths, other spellings and over-long segments are a tagged 404", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const scrape = { authorization: `Bearer ${f.scrapeToken}` }
          assert.strictEqual((yield* f.raw("GET", "/metrics", { headers: scrape })).status, 200)
          for (const path of [
            "/nothing",
            "/Metrics",
            "//metrics",
            "/metrics/",
            "/HEALTHZ",
            "/healthz/",
            "/healthz//",
          ]) {
            tagged(yield* f.raw("GET", path, { headers: scrape }), 404, "NoSuchRoute", path)
          }
          // At the bound a segment reaches the handler (a malformed id: 422); one past it is no route.
          const atBound = yield* f.raw("GET", `/tasks/${"a".repeat(Routes.MAX_SEGMENT)}`, { as: "rita" })
          tagged(atBound, 422, "InvalidRequest", "a segment at the bound")
          const over = yield* f.raw("GET", `/tasks/${"a".repeat(Routes.MAX_SEGMENT + 1)}`, { as: "rita" })
          tagged(over, 404, "NoSuchRoute", "a segment past the bound")
          const far = yield* f.raw("GET", `/tasks/${"a".repeat(10_000)}`, { as: "rita" })
          tagged(far, 404, "NoSuchRoute", "a 10 000-character segment")
          // A trailing slash is no route, not an empty id (the router hands `/runs/` to GET /runs/:run).
          for (const path of ["/runs/", "/tasks/", "/cases/"]) {
            tagged(yield* f.raw("GET", path, { as: "rita" }), 404, "NoSuchRoute", path)
          }
          tagged(yield* f.raw("POST", "/tasks//claim", { as: "rita" }), 404, "NoSuchRoute", "an empty id")
        }),
      ),
    )

    it.effect("a 401 says WWW-Authenticate: Bearer; every answer carries a request id", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const missing = yield* f.raw("GET", "/tasks")
          tagged(missing, 401, "Unauthorized", "no credential")
          assert.match(missing.headers.get("www-authenticate") ?? "", /^Bearer realm="agentplane"$/)
          const unknown = yield* f.raw("GET", "/metrics", { headers: { authorization: "Bearer nope" } })
          tagged(unknown, 401, "Unauthorized", "not a scrape credential")
          assert.match(unknown.headers.get("www-authenticate") ?? "", /^Bearer /)
          // Other statuses do not challenge.
          const forbidden = yield* f.raw("GET", "/tasks", { as: "nobody" })
          tagged(forbidden, 403, "Forbidden", "403")
          assert.strictEqual(forbidden.headers.get("www-authenticate"), null)
          // A proxy's plain id is kept (so the logs join); an odd one is replaced.
          const kept = yield* f.raw("GET", "/healthz", { headers: { "x-request-id": "edge-42.a:b" } })
          assert.strictEqual(kept.headers.get("x-request-id"), "edge-42.a:b")
          const odd = yield* f.raw("GET", "/healthz", { headers: { "x-request-id": "a b" } })
          assert.match(odd.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/)
          assert.match(missing.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/)
        }),
      ),
    )

    it.effect("every error answer is a tagged JSON body", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const cases: ReadonlyArray<readonly [string, string, Record<string, string>, string | undefined, number]> = [
            ["GET", "/tasks", {}, undefined, 401],
            ["GET", "/tasks", { authorization: `Bearer ${f.tokens.nobody}` }, undefined, 403],
            ["GET", "/cases/not-a-case", { authorization: `Bearer ${f.tokens.rita}` }, undefined, 422],
            [
              "POST",
              "/events",
              { authorization: `Bearer ${f.tokens.pat}`, "content-type": "application/json" },
              "{",
              422,
            ],
            ["PATCH", "/tasks", {}, undefined, 405],
            ["GET", "/no/such/route", {}, undefined, 404],
          ]
          for (const [method, path, headers, body, status] of cases) {
            const answer = yield* f.raw(method, path, { headers, ...(body === undefined ? {} : { body }) })
            assert.strictEqual(answer.status, status, `${method} ${path}: ${answer.text}`)
            const json = answer.json as { _tag?: unknown; message?: unknown } | undefined
            assert.strictEqual(typeof json?._tag, "string", `${method} ${path}`)
            assert.strictEqual(typeof json?.message, "string", `${method} ${path}`)
          }
        }),
      ),
    )
  })
})
