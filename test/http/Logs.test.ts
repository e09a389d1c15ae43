/**
 * The request log (issue 17), read back as the JSON lines the server writes: one line per request
 * with method, route template, status, latency, tenant, actor and request id; a defect is one
 * error line with its cause while the client gets a tagged 500 naming only the request id; the
 * minimum level drops info lines but never errors. The log does not depend on the backend, so
 * one (SQLite) is enough.
 */
import { describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as StoreError from "../../src/errors/StoreError.js"
import * as RequestLog from "../../src/http/RequestLog.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import * as Http from "../support/Http.js"

interface Line {
  readonly message: unknown
  readonly logLevel: string
  readonly cause?: string
  readonly annotations: Record<string, unknown>
}

/** A logger at `level` that keeps every line it is given, parsed. */
const capture = (level: RequestLog.Level) => {
  const lines: Array<Line> = []
  return { lines, layer: RequestLog.layerLogger({ level, write: (line) => lines.push(JSON.parse(line) as Line) }) }
}

const requestLines = (lines: ReadonlyArray<Line>) => lines.filter((l) => l.message === "agentplane.http.request")

/** The test's stores, but the case store's census dies: a handler defect, as a bug would cause. */
const dyingCensus = Effect.map(Effect.context<Stores.Stores>(), (context) => {
  const cases = Context.get(context, CaseStore)
  return Layer.succeedContext(
    Context.add(context, CaseStore, { ...cases, census: () => Effect.die(new Error("census exploded")) }),
  )
})

/** The test's stores, but the census fails as an outage does: the API answers 503 itself. */
const failingCensus = Effect.map(Effect.context<Stores.Stores>(), (context) => {
  const cases = Context.get(context, CaseStore)
  return Layer.succeedContext(
    Context.add(context, CaseStore, {
      ...cases,
      census: () => Effect.fail(new StoreError.Backend({ detail: "lock_timeout: held by someone else" })),
    }),
  )
})

describe("request log", () => {
  layer(Backend.sqlite().layer, { excludeTestServices: true })((it) => {
    it.effect("one line per request with its route template, status, latency, caller and request id", () => {
      const log = capture("info")
      return Http.withServer(
        (f) =>
          Effect.gen(function* () {
            const read = yield* f.raw("GET", "/tasks/task_0123456789abcdef0123456789abcdef", {
              as: "rita",
              headers: { "x-request-id": "edge-1" },
            })
            const anonymous = yield* f.raw("GET", "/tasks")
            const unrouted = yield* f.raw("GET", "/nowhere")
            const lines = requestLines(log.lines)
            assert.strictEqual(lines.length, 3, JSON.stringify(log.lines))
            const [first, second, third] = lines.map((l) => l.annotations)
            assert.deepStrictEqual(
              {
                ...first,
                latencySeconds: typeof first?.latencySeconds === "number" && (first.latencySeconds as number) >= 0,
              },
              {
                requestId: "edge-1",
                method: "GET",
                route: "/tasks/:task",
                status: read.status,
                latencySeconds: true,
                tenant: f.tenant,
                actor: "rita",
              },
            )
            assert.strictEqual(lines[0]?.logLevel, "INFO")
            // No credential: no tenant or actor, and the id the server made, as the client saw it.
            assert.deepStrictEqual(
              [second?.status, second?.tenant, second?.actor, second?.requestId],
              [401, null, null, anonymous.headers.get("x-request-id")],
            )
            // A path no route serves is labelled by a fixed word, never by the raw path.
            assert.deepStrictEqual([third?.route, third?.status], ["unmatched", unrouted.status])
            assert.isFalse(JSON.stringify(log.lines).includes("/nowhere"))
          }),
        { log: log.layer },
      )
    })

    it.effect("a defect is a tagged 500 for the client and an error line with its cause", () => {
      const log = capture("info")
      return Effect.flatMap(dyingCensus, (stores) =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const answer = yield* f.raw("GET", "/census", { as: "rita" })
              assert.strictEqual(answer.status, 500)
              const id = answer.headers.get("x-request-id") ?? ""
              const body = answer.json as { _tag: string; requestId: string; message: string }
              assert.deepStrictEqual([body._tag, body.requestId], ["InternalError", id])
              // The client learns nothing of the cause.
              assert.isFalse(answer.text.includes("exploded"))
              const lines = requestLines(log.lines)
              assert.strictEqual(lines.length, 1)
              const line = lines[0] as Line
              assert.deepStrictEqual(
                [line.logLevel, line.annotations.status, line.annotations.requestId, line.annotations.route],
                ["ERROR", 500, id, "/census"],
              )
              assert.match(line.cause ?? "", /census exploded/)
            }),
          { stores, log: log.layer },
        ),
      )
    })

    it.effect("a 5xx the API answers itself is logged at error with its tagged body", () => {
      const log = capture("info")
      return Effect.flatMap(failingCensus, (stores) =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const answer = yield* f.raw("GET", "/census", { as: "rita" })
              assert.strictEqual(answer.status, 503)
              const line = requestLines(log.lines)[0]
              assert.deepStrictEqual(
                [line?.logLevel, line?.annotations.status, (line?.annotations.error as { _tag?: unknown })?._tag],
                ["ERROR", 503, "Unavailable"],
              )
              // The store's own failure, with the driver's detail, is logged beside it under the same id.
              const cause = log.lines.find((l) => l.message === "store unavailable")
              assert.strictEqual(cause?.annotations.requestId, answer.headers.get("x-request-id"))
              assert.match(cause?.cause ?? "", /lock_timeout: held by someone else/)
            }),
          { stores, log: log.layer },
        ),
      )
    })

    it.effect("below the minimum level request lines are dropped, errors are not", () => {
      const log = capture("error")
      return Effect.flatMap(dyingCensus, (stores) =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              assert.strictEqual((yield* f.raw("GET", "/healthz")).status, 200)
              assert.strictEqual((yield* f.raw("GET", "/census", { as: "rita" })).status, 500)
              const lines = requestLines(log.lines)
              assert.deepStrictEqual(
                lines.map((l) => [l.logLevel, l.annotations.route]),
                [["ERROR", "/census"]],
              )
            }),
          { stores, log: log.layer },
        ),
      )
    })
  })
})
