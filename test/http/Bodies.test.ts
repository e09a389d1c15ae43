/**
 * How bodies are read, on each backend (issue 13): a declared charset other than UTF-8 is 415,
 * bytes that are not UTF-8, lone surrogates, duplicate JSON keys, nesting past
 * `MAX_JSON_DEPTH` and sizes past `Limits` are 422 naming the field; and a refused body writes
 * nothing. At the limits themselves every backend stores the event.
 */
import { OpenApi } from "@effect/platform"
import { describe, expect, layer, it as plain } from "@effect/vitest"
import { Effect, Option } from "effect"
import { MAX_JSON_DEPTH, MAX_KEY_VALUE_BYTES, MAX_KEYS, MAX_NAME_BYTES } from "../../src/domain/Limits.js"
import * as Time from "../../src/domain/Time.js"
import { Api } from "../../src/http/Api.js"
import { EventStore } from "../../src/services/EventStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const FAR = Time.Timestamp.make(4_000_000_000)

/** Retires every unclaimed event of the tenant and returns them as dead letters. */
const retired = (f: Http.Fixture) =>
  f.inTenant(
    Effect.flatMap(EventStore, (events) =>
      Effect.zipRight(events.sweepUnclaimed(FAR, "test"), events.deadLetters(500)),
    ),
  )

const JSON_TYPE = { "content-type": "application/json" }
const LATIN1 = { "content-type": "application/json; charset=iso-8859-1" }

/** `text` as UTF-8 with raw bytes spliced in where `\u0000` marks them, one byte per mark. */
const withBytes = (text: string, ...bytes: ReadonlyArray<number>): Uint8Array => {
  const parts = text.split("\u0000")
  const out: Array<Buffer> = []
  parts.forEach((part, i) => {
    out.push(Buffer.from(part, "utf8"))
    if (i < bytes.length) out.push(Buffer.from([bytes[i] as number]))
  })
  return new Uint8Array(Buffer.concat(out))
}

const refusedWith = (answer: Http.RawResponse, status: number, tag: string, pattern?: RegExp) => {
  assert.strictEqual(answer.status, status, answer.text)
  const body = answer.json as { _tag: string; message: string }
  assert.strictEqual(body._tag, tag, answer.text)
  if (pattern !== undefined) assert.match(body.message, pattern)
}

const nested = (depth: number): string => `${"[".repeat(depth)}1${"]".repeat(depth)}`

const binary = { "ce-specversion": "1.0", "ce-source": "urn:erp", "ce-type": "order.shipped" }

describe("the limits in OpenAPI", () => {
  plain("the native event documents its byte limits, key count, depth and the 415", () => {
    const spec = OpenApi.fromApi(Api) as unknown as {
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> }
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
    }
    const native = spec.components.schemas.NativeEvent?.properties ?? {}
    expect(native.id).toMatchObject({
      maxLength: MAX_NAME_BYTES,
      description: expect.stringContaining("512 bytes of UTF-8"),
    })
    expect(native.kind).toMatchObject({ maxLength: MAX_NAME_BYTES })
    expect(native.correlation).toMatchObject({ maxItems: MAX_KEYS })
    expect(JSON.stringify(native.correlation)).toContain(`"maxLength":${MAX_KEY_VALUE_BYTES}`)
    expect(native.payload?.description).toContain(`${MAX_JSON_DEPTH} levels`)
    expect(Object.keys(spec.paths["/events"]?.post?.responses ?? {})).toContain("415")
    expect(Object.keys(spec.paths["/tasks/{task}/decide"]?.post?.responses ?? {})).toContain("415")
  })
})

for (const backend of Http.backends()) {
  describe(`http bodies (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("a declared charset other than UTF-8 is 415 on every body route, and writes nothing", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            // The reproduction: two different ids that UTF-8 decoding with U+FFFD merged.
            for (const byte of [0xfc, 0xf6]) {
              const body = withBytes('{"id":"cust-M\u0000ller","kind":"k"}', byte)
              refusedWith(
                yield* f.raw("POST", "/events", { as: "pat", headers: LATIN1, body }),
                415,
                "UnsupportedMediaType",
                /charset "iso-8859-1"/,
              )
            }
            for (const contentType of [
              "application/cloudevents+json; charset=windows-1252",
              'application/json; charset="latin1"',
              "text/plain; charset=us-ascii",
            ]) {
              const headers = { ...binary, "ce-id": "b-1", "content-type": contentType }
              refusedWith(
                yield* f.raw("POST", "/events", { as: "pat", headers, body: "{}" }),
                415,
                "UnsupportedMediaType",
              )
            }
            const decide = JSON.stringify({ approved: true, reason: "ok" })
            refusedWith(
              yield* f.raw("POST", `/tasks/${t.id}/decide`, { as: "rita", headers: LATIN1, body: decide }),
              415,
              "UnsupportedMediaType",
            )
            refusedWith(
              yield* f.raw("PUT", "/admin/halt", { as: "ada", headers: LATIN1, body: JSON.stringify({ reason: "r" }) }),
              415,
              "UnsupportedMediaType",
            )
            // UTF-8, however it is spelled, is read.
            for (const [i, charset] of ["utf-8", "UTF-8", '"utf-8"', "utf8"].entries()) {
              const body = JSON.stringify({ id: `ok-${i}`, kind: "k" })
              const answer = yield* f.raw("POST", "/events", {
                as: "pat",
                headers: { "content-type": `application/json; charset=${charset}` },
                body,
              })
              assert.strictEqual(answer.status, 202, answer.text)
            }
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
            assert.deepStrictEqual((yield* retired(f)).map((l) => l.event.id).sort(), ["ok-0", "ok-1", "ok-2", "ok-3"])
          }),
        ),
      )

      it.effect("bytes that are not UTF-8 are 422 naming the byte, in every form, never U+FFFD", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const cases: ReadonlyArray<readonly [Record<string, string>, Uint8Array, RegExp]> = [
              [
                JSON_TYPE,
                withBytes('{"id":"cust-M\u0000ller","kind":"k"}', 0xfc),
                /body: is not valid UTF-8 \(at byte 13\)/,
              ],
              [JSON_TYPE, withBytes('{"id":"a","kind":"k","payload":"\u0000\u0000"}', 0xc0, 0xaf), /not valid UTF-8/],
              // An encoded surrogate (CESU-8) is not UTF-8 either.
              [JSON_TYPE, withBytes('{"id":"s\u0000\u0000\u0000","kind":"k"}', 0xed, 0xa0, 0x80), /not valid UTF-8/],
              [
                { "content-type": "application/cloudevents+json" },
                withBytes('{"specversion":"1.0","id":"\u0000","source":"s","type":"t"}', 0xff),
                /body: is not valid UTF-8/,
              ],
              [
                { ...binary, "ce-id": "b-1", "content-type": "text/plain" },
                withBytes("caf\u0000", 0xe9),
                /data: is not valid UTF-8/,
              ],
              [
                { ...binary, "ce-id": "b-2", "content-type": "application/json" },
                withBytes('"\u0000"', 0x80),
                /data: is not valid UTF-8/,
              ],
            ]
            for (const [headers, body, pattern] of cases) {
              refusedWith(yield* f.raw("POST", "/events", { as: "pat", headers, body }), 422, "InvalidRequest", pattern)
            }
            refusedWith(
              yield* f.raw("POST", `/tasks/${t.id}/decide`, {
                as: "rita",
                headers: JSON_TYPE,
                body: withBytes('{"approved":true,"reason":"M\u0000ller"}', 0xfc),
              }),
              422,
              "InvalidRequest",
              /not valid UTF-8/,
            )
            // Binary data that is not text is kept as its bytes (base64), whatever they are.
            const octets = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { ...binary, "ce-id": "b-3", "content-type": "application/octet-stream" },
              body: new Uint8Array([0xff, 0xfe, 0x00]),
            })
            assert.strictEqual(octets.status, 202, octets.text)
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(
              (yield* retired(f)).map((l) => [l.event.id, l.event.payload]),
              [
                [
                  "urn:erp\u001Fb-3",
                  {
                    specversion: "1.0",
                    id: "b-3",
                    source: "urn:erp",
                    type: "order.shipped",
                    datacontenttype: "application/octet-stream",
                    data_base64: "//4A",
                  },
                ],
              ],
            )
          }),
        ),
      )

      it.effect("a lone surrogate in an id, kind, key, payload or header is 422; U+FFFD itself is kept apart", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const native = (fields: string) => ({ headers: JSON_TYPE, body: `{"id":"e","kind":"k",${fields}}` })
            const cases: ReadonlyArray<readonly [{ headers: Record<string, string>; body: string }, RegExp]> = [
              [{ headers: JSON_TYPE, body: '{"id":"s\\ud800","kind":"k"}' }, /lone surrogate.* at \$\.id/],
              [{ headers: JSON_TYPE, body: '{"id":"s","kind":"k\\udfff"}' }, /lone surrogate.* at \$\.kind/],
              [native('"correlation":[{"namespace":"n\\ud800","value":"v"}]'), /at \$\.correlation\[0\]\.namespace/],
              [native('"correlation":[{"namespace":"n","value":"\\udc00x"}]'), /at \$\.correlation\[0\]\.value/],
              [native('"payload":{"deep":["ok","\\ud83d"]}'), /at \$\.payload\.deep\[1\]/],
              [native('"payload":{"k\\ud800":1}'), /a member name contains a lone surrogate/],
              [
                {
                  headers: { "content-type": "application/cloudevents+json" },
                  body: '{"specversion":"1.0","id":"\\ud800","source":"s","type":"t"}',
                },
                /lone surrogate/,
              ],
              [
                { headers: { ...binary, "ce-id": "b", "content-type": "application/json" }, body: '"\\udfff"' },
                /data: .*lone surrogate/,
              ],
            ]
            for (const [request, pattern] of cases) {
              refusedWith(yield* f.raw("POST", "/events", { as: "pat", ...request }), 422, "InvalidRequest", pattern)
            }
            // Raw non-ASCII in a header arrives as ISO-8859-1 mojibake; the binding says percent-encode.
            const raw = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { ...binary, "ce-id": "M\u00fcller", "content-type": "application/json" },
              body: "1",
            })
            refusedWith(raw, 422, "InvalidRequest", /ce-id: characters outside printable ASCII must be percent-encoded/)
            // The colliding ids: "s\ud800" and "s\udfff" are refused, "s\ufffd" is its own event.
            const kept = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: JSON_TYPE,
              body: '{"id":"s\\ufffd","kind":"k"}',
            })
            assert.strictEqual(kept.status, 202, kept.text)
            const again = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: JSON_TYPE,
              body: '{"id":"s\\ufffd","kind":"k"}',
            })
            assert.deepStrictEqual(again.json, { result: "duplicate" })
            assert.deepStrictEqual(
              (yield* retired(f)).map((l) => l.event.id),
              ["s\ufffd"],
            )
          }),
        ),
      )

      it.effect("a duplicated JSON key is 422 on every body route, at any depth, and decides nothing", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
            const decide = `/tasks/${t.id}/decide`
            const cases: ReadonlyArray<readonly [string, string, string, "rita" | "pat" | "ada", RegExp]> = [
              [
                "POST",
                decide,
                '{"approved":true,"approved":false,"reason":"r"}',
                "rita",
                /duplicate member name at \$\.approved/,
              ],
              [
                "POST",
                decide,
                '{"approved":false,"reason":"r","amendment":{"a":1,"a":2}}',
                "rita",
                /at \$\.amendment\.a/,
              ],
              [
                "POST",
                `/tasks/${t.id}/takeover`,
                '{"from":"sam","from":"rita"}',
                "rita",
                /duplicate member name at \$\.from/,
              ],
              ["PUT", "/admin/halt", '{"reason":"a","reason":"b"}', "ada", /duplicate member name/],
              ["POST", "/events", '{"id":"1","id":"2","kind":"k"}', "pat", /duplicate member name at \$\.id/],
              [
                "POST",
                "/events",
                '{"id":"1","kind":"k","payload":{"x":[{"y":1,"y":1}]}}',
                "pat",
                /at \$\.payload\.x\[0\]\.y/,
              ],
            ]
            for (const [method, path, body, as, pattern] of cases) {
              refusedWith(yield* f.raw(method, path, { as, headers: JSON_TYPE, body }), 422, "InvalidRequest", pattern)
            }
            const ce = '{"specversion":"1.0","id":"1","source":"s","type":"t","type":"u"}'
            refusedWith(
              yield* f.raw("POST", "/events", {
                as: "pat",
                headers: { "content-type": "application/cloudevents+json" },
                body: ce,
              }),
              422,
              "InvalidRequest",
              /duplicate member name at \$\.type/,
            )
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
            assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(QuotaStore, (q) => q.halted())), Option.none())
            assert.strictEqual((yield* retired(f)).length, 0)
          }),
        ),
      )

      it.effect(
        `nesting past ${MAX_JSON_DEPTH} levels is 422 naming the depth, even 100,000 deep (was an empty 500)`,
        () =>
          Http.withServer((f) =>
            Effect.gen(function* () {
              const t = yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task())))
              const deep = (n: number) => `{"id":"d-${n}","kind":"k","payload":${nested(n)}}`
              for (const n of [MAX_JSON_DEPTH, 5_000, 100_000]) {
                refusedWith(
                  yield* f.raw("POST", "/events", { as: "pat", headers: JSON_TYPE, body: deep(n) }),
                  422,
                  "InvalidRequest",
                  new RegExp(`nested deeper than ${MAX_JSON_DEPTH} levels at \\$\\.payload`),
                )
              }
              const requests: ReadonlyArray<readonly [Record<string, string>, string]> = [
                [
                  { "content-type": "application/cloudevents+json" },
                  `{"specversion":"1.0","id":"1","source":"s","type":"t","data":${nested(5_000)}}`,
                ],
                [{ ...binary, "ce-id": "b", "content-type": "application/json" }, nested(5_000)],
              ]
              for (const [headers, body] of requests) {
                refusedWith(
                  yield* f.raw("POST", "/events", { as: "pat", headers, body }),
                  422,
                  "InvalidRequest",
                  /nested deeper than/,
                )
              }
              refusedWith(
                yield* f.raw("POST", `/tasks/${t.id}/decide`, {
                  as: "rita",
                  headers: JSON_TYPE,
                  body: `{"approved":true,"reason":"r","amendment":${nested(5_000)}}`,
                }),
                422,
                "InvalidRequest",
                /nested deeper than .* at \$\.amendment/,
              )
              // The payload sits one level inside the body: MAX_JSON_DEPTH - 1 levels of it are stored.
              const ok = yield* f.raw("POST", "/events", {
                as: "pat",
                headers: JSON_TYPE,
                body: deep(MAX_JSON_DEPTH - 1),
              })
              assert.strictEqual(ok.status, 202, ok.text)
              assert.deepStrictEqual(yield* f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(t.id))), Option.some(t))
              assert.deepStrictEqual(
                (yield* retired(f)).map((l) => l.event.id),
                [`d-${MAX_JSON_DEPTH - 1}`],
              )
            }),
          ),
      )

      it.effect(
        "ids, kinds, keys and key counts past the limits are 422 naming the field, the limit and the size",
        () =>
          Http.withServer((f) =>
            Effect.gen(function* () {
              const keys = (n: number) => Array.from({ length: n }, (_, i) => ({ namespace: "n", value: `v${i}` }))
              const cases: ReadonlyArray<readonly [unknown, RegExp]> = [
                [{ id: "x".repeat(3_000), kind: "k" }, /^id: is 3000 bytes of UTF-8, over the limit of 512$/],
                [{ id: "1", kind: "€".repeat(200) }, /^kind: is 600 bytes of UTF-8, over the limit of 512$/],
                [
                  { id: "1", kind: "k", correlation: [{ namespace: "n".repeat(513), value: "v" }] },
                  /correlation\.0\.namespace: is 513 bytes/,
                ],
                [
                  { id: "1", kind: "k", correlation: [{ namespace: "n", value: "v".repeat(3_000) }] },
                  /correlation\.0\.value: .* over the limit of 1024/,
                ],
                [
                  { id: "1", kind: "k", correlation: keys(MAX_KEYS + 1) },
                  /correlation: 257 correlation keys, over the limit of 256/,
                ],
                // The 30,000 keys: refused on the count, at once, not after a quadratic dedupe.
                [{ id: "1", kind: "k", correlation: keys(30_000) }, /30000 correlation keys, over the limit of 256/],
                [{ id: "1", kind: "k", correlation: keys(16_384) }, /16384 correlation keys/],
              ]
              // Refused on the count is shown by the message naming the count; how fast is the
              // bench's business (no timing assertion here), and dedupe's linearity has its own test.
              for (const [body, pattern] of cases) {
                const answer = yield* f.raw("POST", "/events", {
                  as: "pat",
                  headers: JSON_TYPE,
                  body: JSON.stringify(body),
                })
                refusedWith(answer, 422, "InvalidRequest", pattern)
              }
              // CloudEvents: source and id together make the event id, so together they are bounded.
              const ce = { specversion: "1.0", type: "t", source: "s".repeat(300), id: "i".repeat(300) }
              refusedWith(
                yield* f.raw("POST", "/events", {
                  as: "pat",
                  headers: { "content-type": "application/cloudevents+json" },
                  body: JSON.stringify(ce),
                }),
                422,
                "InvalidRequest",
                /source, id: .* 601 bytes of UTF-8, over the limit of 512/,
              )
              refusedWith(
                yield* f.raw("POST", "/events", {
                  as: "pat",
                  headers: {
                    ...binary,
                    "ce-id": "1",
                    "ce-subject": "s".repeat(1_025),
                    "content-type": "application/json",
                  },
                  body: "1",
                }),
                422,
                "InvalidRequest",
                /ce-subject: is 1025 bytes/,
              )
              assert.strictEqual((yield* retired(f)).length, 0)
            }),
          ),
      )

      it.effect("an event at every limit at once is stored and read back whole (each backend holds the maximum)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            // Multi-byte text, so the limit counted is bytes: "é" is 2 bytes, "€" 3, "😀" 4.
            const id = "é".repeat(MAX_NAME_BYTES / 2)
            const kind = "😀".repeat(MAX_NAME_BYTES / 4)
            const correlation = Array.from({ length: MAX_KEYS }, (_, i) => ({
              namespace: `${i}`.padEnd(MAX_NAME_BYTES, "n"),
              value: `${i}`.padEnd(MAX_KEY_VALUE_BYTES - 3, "v").concat("€"),
            }))
            const body = JSON.stringify({ id, kind, correlation, payload: { note: "at the limits" } })
            const first = yield* f.raw("POST", "/events", { as: "pat", headers: JSON_TYPE, body })
            assert.deepStrictEqual([first.status, first.json], [202, { result: "buffered" }], first.text)
            const again = yield* f.raw("POST", "/events", { as: "pat", headers: JSON_TYPE, body })
            assert.deepStrictEqual([again.status, again.json], [202, { result: "duplicate" }], again.text)
            const [letter, ...rest] = yield* retired(f)
            assert.strictEqual(rest.length, 0)
            assert.strictEqual(letter?.event.id, id)
            assert.strictEqual(letter?.event.kind, kind)
            // Stored keys read back in code-point order, not as sent.
            assert.deepStrictEqual(
              letter?.event.correlation.map((k) => `${k.namespace}=${k.value}`).sort(),
              correlation.map((k) => `${k.namespace}=${k.value}`).sort(),
            )
          }),
        ),
      )
    })
  })
}
