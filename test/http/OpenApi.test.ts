/**
 * The OpenAPI document a real server serves at `/openapi.json`: lint-clean under Redocly's
 * `recommended` rules (the rules `redocly lint` applies), and true where the generator alone
 * would not be: error lists per operation, `limit` bounds, one list shape, security, version,
 * the request shapes of `POST /events`. Backend-independent, so it runs on SQLite only.
 */
import { readFileSync } from "node:fs"
import { describe, layer } from "@effect/vitest"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { Effect } from "effect"
import { VERSION } from "../../src/Version.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, read by path.
type Doc = Record<string, any>

const served = (f: Http.Fixture) =>
  Effect.map(f.raw("GET", "/openapi.json"), (answer) => {
    assert.strictEqual(answer.status, 200)
    return { text: answer.text, doc: answer.json as Doc }
  })

const operations = (doc: Doc): ReadonlyArray<readonly [string, string, Doc]> =>
  Object.entries<Doc>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Doc>(item).map(([method, op]) => [method.toUpperCase(), path, op] as const),
  )

const resolve = (doc: Doc, schema: Doc): Doc =>
  typeof schema.$ref === "string" ? resolve(doc, doc.components.schemas[schema.$ref.split("/").pop() ?? ""]) : schema

describe("OpenAPI document", () => {
  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    it.effect("passes Redocly's recommended lint: no error, and no warning but the probes' lack of a 4xx", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const { text } = yield* served(f)
          const problems = yield* Effect.promise(async () =>
            lintFromString({
              source: text,
              absoluteRef: "/openapi.json",
              config: await createConfig({ extends: ["recommended"] }),
            }),
          )
          const shown = problems.map((p) => `${p.severity} ${p.ruleId} ${p.location.map((l) => l.pointer).join(",")}`)
          // A public liveness or readiness probe has no 4xx to answer; inventing one would lie.
          const allowed = (line: string) =>
            /^warn operation-4xx-response #\/paths\/~1(healthz|readyz)\/get\/responses$/.test(line)
          assert.deepStrictEqual(
            shown.filter((line) => !allowed(line)),
            [],
          )
        }),
      ),
    )

    it.effect(
      "each operation lists only the errors it can answer; the platform's 400 is gone, ours is two credentials",
      () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const { doc } = yield* served(f)
            const statuses = (method: string, path: string) =>
              Object.keys(doc.paths[path][method.toLowerCase()].responses).sort()
            assert.deepStrictEqual(statuses("GET", "/healthz"), ["200", "400"])
            assert.deepStrictEqual(statuses("GET", "/tasks"), ["200", "400", "401", "403", "422", "500", "503"])
            assert.deepStrictEqual(statuses("GET", "/census"), ["200", "400", "401", "403", "500", "503"])
            assert.deepStrictEqual(statuses("POST", "/tasks/{task}/decide"), [
              "200",
              "400",
              "401",
              "403",
              "404",
              "409",
              "413",
              "415",
              "422",
              "500",
              "503",
            ])
            for (const [method, path, op] of operations(doc)) {
              const listed = Object.keys(op.responses)
              assert.match(op.responses["400"].description, /AmbiguousCredential/, `${method} ${path}`)
              if (method === "GET")
                assert.isFalse(listed.includes("413") || listed.includes("415"), `${method} ${path}`)
              if (op.requestBody === undefined) assert.isFalse(listed.includes("415"), `${method} ${path}`)
              if (op.security.length === 0) assert.isFalse(listed.includes("401"), `${method} ${path} is public`)
            }
            assert.strictEqual(doc.components.schemas.HttpApiDecodeError, undefined)
            // What the document says is sent: 422 for an out-of-bounds limit, not 400.
            const refused = yield* f.raw("GET", "/tasks?limit=0", { as: "rita" })
            assert.deepStrictEqual([refused.status, (refused.json as { _tag: string })._tag], [422, "InvalidRequest"])
          }),
        ),
    )

    it.effect("a list's default filter is in its parameter's schema, and a bare request uses it", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const { doc } = yield* served(f)
          const param = (path: string, name: string) =>
            doc.paths[path].get.parameters.find((p: Doc) => p.name === name) as Doc
          const status = param("/cases", "status")
          assert.deepStrictEqual([status.schema.default, status.required], ["escalated", false])
          assert.match(String(status.description ?? status.schema.description), /absent, `escalated`/)
          assert.strictEqual(param("/runs", "outcome").schema.default, "quarantined")
          const bare = yield* f.raw("GET", "/cases", { as: "rita" })
          assert.strictEqual(bare.status, 200, bare.text)
        }),
      ),
    )

    it.effect("limit is an integer 1 … 500, and every list route answers {items, truncated}", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const { doc } = yield* served(f)
          const lists = operations(doc).filter(([, , op]) => op.parameters.some((p: Doc) => p.name === "limit"))
          assert.deepStrictEqual(lists.map(([method, path]) => `${method} ${path}`).sort(), [
            "GET /cases",
            "GET /dead-letters",
            "GET /obligations",
            "GET /runs",
            "GET /runs/{run}/journal",
            "GET /tasks",
          ])
          for (const [method, path, op] of lists) {
            const limit = op.parameters.find((p: Doc) => p.name === "limit")
            assert.deepStrictEqual(
              [limit.schema.type, limit.schema.minimum, limit.schema.maximum, limit.required],
              ["integer", 1, 500, false],
              `${method} ${path}`,
            )
            const page = resolve(doc, op.responses["200"].content["application/json"].schema)
            assert.deepStrictEqual(
              [Object.keys(page.properties).sort(), [...page.required].sort(), page.properties.truncated.type],
              [["items", "truncated"], ["items", "truncated"], "boolean"],
              `${method} ${path}`,
            )
          }
        }),
      ),
    )

    it.effect("security is bearer at the top, public operations opt out; servers, summaries and version are set", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const { doc } = yield* served(f)
          assert.deepStrictEqual(doc.security, [{ bearer: [] }])
          assert.deepStrictEqual(doc.components.securitySchemes.bearer, { type: "http", scheme: "bearer" })
          assert.deepStrictEqual(doc.paths["/healthz"].get.security, [])
          assert.deepStrictEqual(doc.paths["/tasks"].get.security, [{ bearer: [] }])
          assert.deepStrictEqual(doc.servers, [{ url: "/", description: "the server serving this document" }])
          for (const [method, path, op] of operations(doc))
            assert.strictEqual(typeof op.summary, "string", `${method} ${path}`)
          const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as Doc
          assert.deepStrictEqual([doc.info.version, VERSION], [pkg.version, pkg.version])
        }),
      ),
    )

    it.effect("POST /events documents the native shape and CloudEvents in structured, batched and binary mode", () =>
      Http.withServer((f) =>
        Effect.gen(function* () {
          const { doc } = yield* served(f)
          const deliver = doc.paths["/events"].post
          const content = deliver.requestBody.content
          assert.deepStrictEqual(Object.keys(content).sort(), [
            "*/*",
            "application/cloudevents+json",
            "application/cloudevents-batch+json",
            "application/json",
          ])
          assert.deepStrictEqual(content["application/cloudevents+json"].schema, {
            $ref: "#/components/schemas/CloudEvent",
          })
          assert.deepStrictEqual(doc.components.schemas.CloudEvent.required, ["specversion", "id", "source", "type"])
          assert.strictEqual(content["application/cloudevents-batch+json"].schema.type, "array")
          const headers = deliver.parameters.filter((p: Doc) => p.in === "header").map((p: Doc) => p.name)
          for (const name of ["ce-specversion", "ce-id", "ce-source", "ce-type", "ce-subject", "ce-agentplanekeys"]) {
            assert.include(headers, name)
          }
          const handshake = doc.paths["/events"].options
          assert.deepStrictEqual(
            handshake.parameters.filter((p: Doc) => p.required).map((p: Doc) => [p.in, p.name]),
            [["header", "webhook-request-origin"]],
          )
          assert.deepStrictEqual(Object.keys(handshake.responses["200"].headers).sort(), [
            "Allow",
            "WebHook-Allowed-Origin",
            "WebHook-Allowed-Rate",
          ])
        }),
      ),
    )
  })
})
