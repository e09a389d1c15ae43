/**
 * Issue 49: the three body refusals are recognised by their tagged error, never by an error's
 * text. On `/events` (the route that reads its body itself) and `/runs`, a chunked body past
 * 1 MiB is 413 `PayloadTooLarge`, a media type the route does not read is 415
 * `UnsupportedMediaType`, and malformed JSON is 422 `InvalidRequest`; none of them buffers an
 * event or admits a run.
 */
import { request as httpRequest } from "node:http"
import { describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Time from "../../src/domain/Time.js"
import { EventStore } from "../../src/services/EventStore.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const FAR = Time.Timestamp.make(4_000_000_000)

/** A POST with a chunked body (no Content-Length) of `size` spaces: the status and body text. */
const chunked = (url: string, token: string, contentType: string, size: number) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          url,
          { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType } },
          (res) => {
            let body = ""
            res.setEncoding("utf8")
            res.on("data", (c: string) => {
              body += c
            })
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
          },
        )
        req.on("error", reject)
        const piece = Buffer.alloc(65_536, 0x20)
        let sent = 0
        const write = () => {
          while (sent < size) {
            sent += piece.byteLength
            if (!req.write(piece)) return void req.once("drain", write)
          }
          req.end()
        }
        write()
      }),
  )

const tagOf = (text: string): unknown => (JSON.parse(text) as { _tag?: unknown })._tag

for (const backend of Http.backends()) {
  describe(`http body refusals by tag (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("oversize, a wrong media type and malformed JSON each have one status and tag, writing nothing", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const cases: ReadonlyArray<readonly [string, Http.CallerName, string]> = [
              ["/events", "pat", "application/cloudevents+json"],
              ["/events", "pat", "application/json"],
              ["/runs", "ada", "application/json"],
            ]
            for (const [path, as, type] of cases) {
              const over = yield* chunked(`${f.baseUrl}${path}`, f.tokens[as], type, 1_200_000)
              assert.strictEqual(over.status, 413, `${path} ${type}: ${over.body}`)
              assert.strictEqual(tagOf(over.body), "PayloadTooLarge", over.body)
              const malformed = yield* f.raw("POST", path, { as, headers: { "content-type": type }, body: '{"id":' })
              assert.strictEqual(malformed.status, 422, `${path} ${type}: ${malformed.text}`)
              assert.strictEqual(tagOf(malformed.text), "InvalidRequest", malformed.text)
              assert.match(malformed.text, /not JSON|JSON/)
              const wrong = yield* f.raw("POST", path, { as, headers: { "content-type": "text/xml" }, body: "<e/>" })
              assert.strictEqual(wrong.status, 415, `${path}: ${wrong.text}`)
              assert.strictEqual(tagOf(wrong.text), "UnsupportedMediaType", wrong.text)
            }
            const buffered = yield* f.inTenant(
              Effect.flatMap(EventStore, (events) =>
                Effect.zipRight(events.sweepUnclaimed(FAR, "test"), events.deadLetters(50)),
              ),
            )
            assert.deepStrictEqual(buffered, [])
            const runs = yield* f.raw("GET", "/runs", { as: "ada" })
            assert.strictEqual(runs.status, 200, runs.text)
            assert.deepStrictEqual(runs.json, { items: [], truncated: false })
          }),
        ),
      )
    })
  })
}
