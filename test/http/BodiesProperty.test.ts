/**
 * Random bodies against `POST /events` and `POST /tasks/:id/decide`, on each backend (issue 13):
 * random bytes, charsets and encodings, nesting depths, sizes, key counts and duplicated keys.
 * No answer is a 5xx; a body with a duplicated key, nesting past the limit or a declared charset
 * other than UTF-8 is always 415 or 422; and a refused request changes nothing: the task reads as it was after
 * every refused decide, and the tenant's buffer holds exactly the events answered `buffered`.
 * `AGENTPLANE_PROP_RUNS` sets the number of bodies per route (default 40).
 */
import { describe, layer } from "@effect/vitest"
import { Effect, FastCheck as fc, Option, Runtime } from "effect"
import { MAX_JSON_DEPTH } from "../../src/domain/Limits.js"
import * as Time from "../../src/domain/Time.js"
import { EventStore } from "../../src/services/EventStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"

const runs = Number(process.env.AGENTPLANE_PROP_RUNS ?? 40)

const FAR = Time.Timestamp.make(4_000_000_000)

// --- what a body is made of -----------------------------------------------------------------

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => `s${String.fromCharCode(c)}`)

/** Strings of every kind: short, any code point, lone surrogates, and long in 1-4 byte characters. */
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 8 }),
  loneSurrogate,
  fc.tuple(fc.integer({ min: 0, max: 1_500 }), fc.constantFrom("x", "é", "€", "😀")).map(([n, c]) => c.repeat(n)),
)

/** JSON text and whether, read as JSON anywhere in a body, it must be refused. */
interface Piece {
  readonly text: string
  readonly refused: boolean
}

/** JSON text nested `depth` levels, written directly (no recursion on either side). */
const nestedText = fc
  .oneof(fc.integer({ min: 0, max: 200 }), fc.constantFrom(127, 128, 129, 5_000))
  .map((depth): Piece => ({ text: `${"[".repeat(depth)}0${"]".repeat(depth)}`, refused: depth > MAX_JSON_DEPTH }))

/** A payload as JSON text: ordinary values, deep nesting, or an object with a duplicated key. */
const payloadText: fc.Arbitrary<Piece> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => ({ text: JSON.stringify(v), refused: false })),
  nestedText,
  fc.tuple(text, fc.jsonValue({ maxDepth: 1 })).map(([k, v]) => ({
    text: `{${JSON.stringify(k)}:1,${JSON.stringify(k)}:${JSON.stringify(v)}}`,
    refused: true,
  })),
)

const keys = fc.oneof(
  fc.array(fc.record({ namespace: text, value: text }), { maxLength: 4 }),
  fc
    .integer({ min: 0, max: 600 })
    .map((n) => Array.from({ length: n }, (_, i) => ({ namespace: "n", value: `v${i % 300}` }))),
)

/** JSON text of an event-ish object, sometimes with a member repeated at the top. */
const eventText = fc
  .record({ id: text, kind: text, correlation: keys, payload: payloadText, duplicate: fc.boolean() })
  .map(({ id, kind, correlation, payload, duplicate }): Piece => {
    const head = `"id":${JSON.stringify(id)},"kind":${JSON.stringify(kind)},"correlation":${JSON.stringify(correlation)}`
    return {
      text: `{${duplicate ? `"id":"first",` : ""}${head},"payload":${payload.text}}`,
      refused: duplicate || payload.refused,
    }
  })

const decideText = fc
  .record({
    approved: fc.oneof(fc.boolean(), text),
    reason: text,
    amendment: payloadText,
    duplicate: fc.constantFrom("none", "approved", "amendment"),
  })
  .map(({ approved, reason, amendment, duplicate }): Piece => {
    const first = duplicate === "approved" ? `"approved":${JSON.stringify(!approved)},` : ""
    const more = duplicate === "amendment" ? `,"amendment":null` : ""
    return {
      text: `{${first}"approved":${JSON.stringify(approved)},"reason":${JSON.stringify(reason)},"amendment":${amendment.text}${more}}`,
      refused: duplicate !== "none" || amendment.refused,
    }
  })

/** How the text travels: its bytes in some encoding, with or without a charset saying which. */
const encoding = fc.constantFrom(
  { charset: "", as: "utf8" },
  { charset: "; charset=utf-8", as: "utf8" },
  { charset: "; charset=iso-8859-1", as: "latin1" },
  { charset: "; charset=utf-16", as: "utf16le" },
  { charset: "", as: "latin1" },
  { charset: "", as: "utf16le" },
) as fc.Arbitrary<{ readonly charset: string; readonly as: BufferEncoding }>

/** A declared charset that is not UTF-8: refused, whatever the body. */
const foreign = (charset: string): boolean => charset !== "" && charset !== "; charset=utf-8"

/** A request, and whether it must be refused whatever else it holds (the property's oracle). */
interface Request {
  readonly headers: Record<string, string>
  readonly body: Uint8Array
  readonly refused: boolean
}

const encode = (s: string, as: BufferEncoding): Uint8Array => new Uint8Array(Buffer.from(s, as))

const randomBytes = fc.uint8Array({ maxLength: 300 })

/** A request to `POST /events` in one of the three forms, or random bytes. */
const eventRequest: fc.Arbitrary<Request> = fc.oneof(
  fc.tuple(eventText, encoding).map(([s, e]) => ({
    headers: { "content-type": `application/json${e.charset}` },
    body: encode(s.text, e.as),
    refused: s.refused || foreign(e.charset),
  })),
  fc.tuple(text, text, text, payloadText, encoding).map(([id, source, type, data, e]) => ({
    headers: { "content-type": `application/cloudevents+json${e.charset}` },
    body: encode(
      `{"specversion":"1.0","id":${JSON.stringify(id)},"source":${JSON.stringify(source)},"type":${JSON.stringify(type)},"data":${data.text}}`,
      e.as,
    ),
    refused: data.refused || foreign(e.charset),
  })),
  fc
    .tuple(
      fc.string({ maxLength: 8 }),
      fc.constantFrom("application/json", "text/plain", "application/octet-stream"),
      payloadText,
      encoding,
    )
    .map(([id, media, data, e]) => ({
      headers: {
        "ce-specversion": "1.0",
        "ce-source": "urn:p",
        "ce-type": "t",
        "ce-id": encodeURIComponent(id),
        "content-type": `${media}${e.charset}`,
      },
      body: encode(data.text, e.as),
      // Only JSON data is read as JSON; text and octets are kept as they are.
      refused: (media === "application/json" && data.refused) || foreign(e.charset),
    })),
  fc
    .tuple(randomBytes, fc.constantFrom("application/json", "application/cloudevents+json"))
    .map(([body, type]) => ({ headers: { "content-type": type }, body, refused: false })),
)

const decideRequest: fc.Arbitrary<Request> = fc.oneof(
  fc.tuple(decideText, encoding).map(([s, e]) => ({
    headers: { "content-type": `application/json${e.charset}` },
    body: encode(s.text, e.as),
    refused: s.refused || foreign(e.charset),
  })),
  randomBytes.map((body) => ({ headers: { "content-type": "application/json" }, body, refused: false })),
)

// --- the property ---------------------------------------------------------------------------

const show = (r: Request): string =>
  `${JSON.stringify(r.headers)} ${Buffer.from(r.body).toString("latin1").slice(0, 300)}`

for (const backend of Http.backends()) {
  describe(`http random bodies (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("POST /events: never a 5xx, and the buffer holds exactly what was answered buffered", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            let buffered = 0
            yield* Effect.promise(() =>
              fc.assert(
                fc.asyncProperty(eventRequest, async (request) => {
                  const answer = await Effect.runPromise(
                    f.raw("POST", "/events", { as: "pat", headers: request.headers, body: request.body }),
                  )
                  assert.isTrue(
                    answer.status >= 200 && answer.status < 500,
                    `${answer.status} ${answer.text} ← ${show(request)}`,
                  )
                  if (request.refused) {
                    assert.isTrue(
                      answer.status === 415 || answer.status === 422,
                      `${answer.status} ${answer.text} ← ${show(request)}`,
                    )
                  }
                  if (answer.status >= 400)
                    assert.isTrue(typeof (answer.json as { _tag?: unknown })?._tag === "string", answer.text)
                  if ((answer.json as { result?: string } | undefined)?.result === "buffered") buffered++
                }),
                { numRuns: runs },
              ),
            )
            const stored = yield* f.inTenant(
              Effect.flatMap(EventStore, (events) =>
                Effect.zipRight(events.sweepUnclaimed(FAR, "test"), events.deadLetters(runs + 10)),
              ),
            )
            assert.strictEqual(stored.length, buffered)
          }),
        ),
      )

      it.effect("POST /tasks/:id/decide: never a 5xx, and a refused decide leaves the task as it was", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const runtime = yield* Effect.runtime<TaskStore>()
            const run = <A, E>(effect: Effect.Effect<A, E, TaskStore>) => Runtime.runPromise(runtime)(effect)
            const open = () =>
              run(f.inTenant(Effect.flatMap(TaskStore, (s) => s.open(task({ candidateRoles: ["reviewer"] })))))
            let current = yield* Effect.promise(open)
            yield* Effect.promise(() =>
              fc.assert(
                fc.asyncProperty(decideRequest, async (request) => {
                  const answer = await Effect.runPromise(
                    f.raw("POST", `/tasks/${current.id}/decide`, {
                      as: "rita",
                      headers: request.headers,
                      body: request.body,
                    }),
                  )
                  assert.isTrue(
                    answer.status >= 200 && answer.status < 500,
                    `${answer.status} ${answer.text} ← ${show(request)}`,
                  )
                  if (request.refused) {
                    assert.isTrue(
                      answer.status === 415 || answer.status === 422,
                      `${answer.status} ${answer.text} ← ${show(request)}`,
                    )
                  }
                  if (answer.status < 300) {
                    // Decided: the next body needs a task still open.
                    current = await open()
                    return
                  }
                  const after = await run(f.inTenant(Effect.flatMap(TaskStore, (s) => s.task(current.id))))
                  assert.deepStrictEqual(
                    after,
                    Option.some(current),
                    `${answer.status} ${answer.text} ← ${show(request)}`,
                  )
                }),
                { numRuns: runs },
              ),
            )
          }),
        ),
      )
    })
  })
}
