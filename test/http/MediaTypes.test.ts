/**
 * Requests an integrator's tools send that are not what a route reads (issue 33), on each
 * backend: a body in another media type than JSON, or with none declared, is 415 before it is
 * parsed, on every route that reads JSON; a chunked body past 1 MiB is a 413 the client reads (not a reset); an integer
 * no JSON number carries exactly is 422 naming its path; two Authorization headers are 400. None
 * of them writes anything.
 */
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { RunId } from "../../src/domain/Ids.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

/** A POST through node:http with a chunked body (no Content-Length) of `size` bytes, sent in 64 KiB pieces. */
const chunked = (url: string, token: string, size: number) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          url,
          {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          },
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

/** One raw HTTP/1.1 request over a socket (headers exactly as given, repeats included); the status code. */
const rawStatus = (baseUrl: string, lines: ReadonlyArray<string>, body = "") =>
  Effect.promise(
    () =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const url = new URL(baseUrl)
        const socket = connect(Number(url.port), url.hostname, () => {
          const head = [
            ...lines,
            `Host: ${url.host}`,
            "Connection: close",
            `Content-Length: ${Buffer.byteLength(body)}`,
          ]
          socket.write(`${head.join("\r\n")}\r\n\r\n${body}`)
        })
        let text = ""
        socket.setEncoding("utf8")
        socket.on("data", (c: string) => {
          text += c
        })
        socket.on("end", () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }))
        socket.on("error", reject)
      }),
  )

const refused = (answer: Http.RawResponse, status: number, tag: string, pattern?: RegExp) => {
  assert.strictEqual(answer.status, status, answer.text)
  const body = answer.json as { _tag: string; message: string }
  assert.strictEqual(body._tag, tag, answer.text)
  if (pattern !== undefined) assert.match(body.message, pattern)
}

for (const backend of Http.backends()) {
  describe(`http media types and framing (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("a body that is not JSON is 415 naming application/json on every JSON route, and writes nothing", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const run = RunId.make("run_01JZZZZZZZZZZZZZZZZZZZZZZZ")
            const routes: ReadonlyArray<readonly [string, string, Http.CallerName]> = [
              ["POST", "/runs", "ada"],
              ["POST", `/runs/${run}/cancel`, "ada"],
              ["POST", `/tasks/${t.id}/decide`, "rita"],
              ["PUT", "/admin/halt", "ada"],
            ]
            const bodies: ReadonlyArray<readonly [string, string]> = [
              [
                "multipart/form-data; boundary=x",
                '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n',
              ],
              ["text/plain", '{"approved":true,"reason":"ok"}'],
              ["application/x-www-form-urlencoded", "approved=true&reason=ok"],
              ["application/xml", "<decision approved='true'/>"],
            ]
            for (const [method, path, as] of routes) {
              for (const [type, body] of bodies) {
                refused(
                  yield* f.raw(method, path, { as, headers: { "content-type": type }, body }),
                  415,
                  "UnsupportedMediaType",
                  /application\/json/,
                )
              }
            }
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
          }),
        ),
      )

      it.effect("a chunked body past 1 MiB is a 413 the client reads; one under it is read", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const over = yield* chunked(`${f.baseUrl}/tasks/${t.id}/decide`, f.tokens.rita, 1_200_000)
            assert.strictEqual(over.status, 413, over.body)
            assert.strictEqual((JSON.parse(over.body) as { _tag: string })._tag, "PayloadTooLarge")
            // Under the limit the same framing reaches the body's validation (all spaces: not JSON).
            const under = yield* chunked(`${f.baseUrl}/tasks/${t.id}/decide`, f.tokens.rita, 65_536)
            assert.strictEqual(under.status, 422, under.body)
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
          }),
        ),
      )

      it.effect("an integer past 2^53 is 422 naming its path, never stored rounded", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const body = '{"id":"big-1","kind":"k","payload":{"amount":9007199254740993}}'
            refused(
              yield* f.raw("POST", "/events", { as: "pat", headers: { "content-type": "application/json" }, body }),
              422,
              "InvalidRequest",
              /beyond ±2\^53.*\$\.payload\.amount/,
            )
            const exact = '{"id":"big-2","kind":"k","payload":{"amount":9007199254740992}}'
            const kept = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { "content-type": "application/json" },
              body: exact,
            })
            assert.strictEqual(kept.status, 202, kept.text)
          }),
        ),
      )

      it.effect("a body with no Content-Type is 415 naming application/json; a request with no body needs none", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const run = RunId.make("run_01JZZZZZZZZZZZZZZZZZZZZZZZ")
            const routes: ReadonlyArray<readonly [string, string, string]> = [
              ["POST", "/runs", f.tokens.ada],
              ["POST", `/runs/${run}/cancel`, f.tokens.ada],
              ["POST", `/tasks/${t.id}/decide`, f.tokens.rita],
              ["PUT", "/admin/halt", f.tokens.ada],
            ]
            for (const [method, path, token] of routes) {
              const answer = yield* rawStatus(
                f.baseUrl,
                [`${method} ${path} HTTP/1.1`, `Authorization: Bearer ${token}`],
                '{"approved":true,"reason":"ok"}',
              )
              assert.strictEqual(answer.status, 415, `${method} ${path}: ${answer.text}`)
              assert.match(answer.text, /"_tag":"UnsupportedMediaType"/)
              assert.match(answer.text, /declares no content-type; send it as application\/json/)
            }
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
            // No body at all: the type is not asked for, and the route's own validation answers.
            const bare = yield* rawStatus(f.baseUrl, [
              "PUT /admin/halt HTTP/1.1",
              `Authorization: Bearer ${f.tokens.ada}`,
            ])
            assert.strictEqual(bare.status, 422, bare.text)
          }),
        ),
      )

      it.effect("two Authorization headers are 400, whichever comes first", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            for (const [first, second] of [
              [f.tokens.ada, f.tokens.nobody],
              [f.tokens.nobody, f.tokens.ada],
            ]) {
              const answer = yield* rawStatus(
                f.baseUrl,
                [
                  "PUT /admin/halt HTTP/1.1",
                  `Authorization: Bearer ${first}`,
                  `Authorization: Bearer ${second}`,
                  "Content-Type: application/json",
                ],
                '{"reason":"r"}',
              )
              assert.strictEqual(answer.status, 400, answer.text)
              assert.match(answer.text, /"_tag":"AmbiguousCredential"/)
            }
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
            const one = yield* rawStatus(f.baseUrl, ["GET /tasks HTTP/1.1", `Authorization: Bearer ${f.tokens.rita}`])
            assert.strictEqual(one.status, 200, one.text)
          }),
        ),
      )
    })
  })
}
