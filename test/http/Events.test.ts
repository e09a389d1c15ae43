/**
 * `POST /events` on each backend: the native shape through the derived client, CloudEvents in
 * structured and binary mode by hand, and what each refuses. The source is always the caller.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { Subscription } from "../../src/domain/Event.js"
import { generateRunId, StepId } from "../../src/domain/Ids.js"
import * as Time from "../../src/domain/Time.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

const FAR = Time.Timestamp.make(4_000_000_000)

const wait = (kind: string, key: CorrelationKey.CorrelationKey) =>
  new Subscription({
    run: generateRunId(),
    case: Option.none(),
    effect: EffectKey.make("a".repeat(64)),
    step: StepId.make(2),
    phase: "forward",
    kind,
    correlation: [key],
  })

/** Retires every unclaimed event of the tenant and returns them as dead letters, newest first. */
const retired = (f: Http.Fixture, tenant = f.tenant) =>
  f.inTenant(
    Effect.flatMap(EventStore, (events) => Effect.zipRight(events.sweepUnclaimed(FAR, "test"), events.deadLetters(50))),
    tenant,
  )

const structured = (attributes: Record<string, unknown>) => ({
  headers: { "content-type": "application/cloudevents+json" },
  body: JSON.stringify(attributes),
})

const ce = { specversion: "1.0", id: "evt-1", source: "https://billing.example/", type: "invoice.paid" }

for (const backend of Http.backends()) {
  describe(`http events (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("the native shape is buffered under the caller's source, then a duplicate (202)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const payload = {
              id: "n-1",
              kind: "reply",
              correlation: [{ namespace: "doc", value: "D-1" }],
              payload: { ok: 1 },
            }
            assert.deepStrictEqual(yield* f.as("pat").events.deliver({ payload }), { result: "buffered" })
            assert.deepStrictEqual(yield* f.as("pat").events.deliver({ payload }), { result: "duplicate" })
            const raw = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(payload),
            })
            assert.deepStrictEqual([raw.status, raw.json], [202, { result: "duplicate" }])
            const letters = yield* retired(f)
            assert.deepStrictEqual(
              letters.map((l) => [
                l.event.source,
                l.event.id,
                l.event.kind,
                l.event.payload,
                String(l.event.correlation),
              ]),
              [["agentplane://caller/pat", "n-1", "reply", { ok: 1 }, "doc=D-1"]],
            )
          }),
        ),
      )

      it.effect("an event answering a waiting run resumes it (resumed, with the run); the run finishes with it", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const invoice = `INV-${Math.random()}`
              const started = yield* f.inTenant(Definitions.start(f.runtime, Definitions.awaitsPayment, invoice))
              assert.strictEqual(started.status._tag, "Suspended")
              const answer = yield* f.raw("POST", "/events", {
                as: "pat",
                ...structured({ ...ce, subject: invoice, data: { paid: 40 } }),
              })
              assert.deepStrictEqual([answer.status, answer.json], [202, { result: "resumed", run: started.run }])
              // The run is driven in the server's background, not inside the request.
              yield* f.runtime.idle
              const records = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.read(started.run, 1)))
              const last = records[records.length - 1]
              assert.deepStrictEqual(last?.kind.kind === "RunSealed" ? last.kind.outcome : last?.kind.kind, "succeeded")
              const again = yield* f.raw("POST", "/events", {
                as: "pat",
                ...structured({ ...ce, subject: invoice, data: { paid: 40 } }),
              })
              assert.deepStrictEqual([again.status, again.json], [202, { result: "duplicate" }])
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect("an event matching a wait whose run this server cannot resume stays claimed for it (buffered)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            // A subscription with no journal behind it: no run here to resume.
            const sub = wait("invoice.paid", CorrelationKey.make("subject", "INV-7"))
            yield* f.inTenant(Effect.flatMap(EventStore, (events) => events.subscribe(sub, Time.Timestamp.make(1))))
            const answer = yield* f.raw("POST", "/events", {
              as: "pat",
              ...structured({ ...ce, subject: "INV-7", data: { paid: 40 } }),
            })
            assert.deepStrictEqual([answer.status, answer.json], [202, { result: "buffered" }])
            const claimed = yield* f.inTenant(Effect.flatMap(EventStore, (events) => events.claimFor(sub, FAR)))
            // The payload is the CloudEvent itself in the JSON format, its data inside.
            assert.deepStrictEqual(
              Option.map(claimed, (b) => [b.event.source, b.event.id, b.event.payload]),
              Option.some([
                "agentplane://caller/pat",
                "https://billing.example/\u001Fevt-1",
                { ...ce, subject: "INV-7", datacontenttype: "application/json", data: { paid: 40 } },
              ]),
            )
          }),
        ),
      )

      it.effect("structured mode: id joins producer source and id, type is the kind, subject the one key", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const sent = yield* f.raw("POST", "/events", {
              as: "pat",
              ...structured({ ...ce, source: "https://evil.example/", subject: "INV-1", traceparent: "00-x" }),
            })
            assert.deepStrictEqual([sent.status, sent.json], [202, { result: "buffered" }])
            yield* f.raw("POST", "/events", { as: "pat", ...structured({ ...ce, data_base64: "AAE=" }) })
            const letters = yield* f.as("ada").operations.deadLetters({ urlParams: { limit: 10 } })
            assert.strictEqual(letters.items.length, 0)
            yield* retired(f)
            const listed = yield* f.as("ada").operations.deadLetters({ urlParams: { limit: 10 } })
            assert.deepStrictEqual(
              listed.items
                .map((l) => [
                  l.event.source,
                  l.event.id,
                  l.event.kind,
                  l.event.payload,
                  l.event.correlation.map(String),
                  l.reason,
                ])
                .sort(),
              [
                [
                  "agentplane://caller/pat",
                  "https://billing.example/\u001Fevt-1",
                  "invoice.paid",
                  { ...ce, data_base64: "AAE=" },
                  [],
                  "test",
                ],
                [
                  "agentplane://caller/pat",
                  "https://evil.example/\u001Fevt-1",
                  "invoice.paid",
                  { ...ce, source: "https://evil.example/", subject: "INV-1", traceparent: "00-x" },
                  ["subject=INV-1"],
                  "test",
                ],
              ],
            )
          }),
        ),
      )

      it.effect("binary mode: ce-* headers carry the attributes, the body is data by its content type", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const headers = { "ce-specversion": "1.0", "ce-source": "urn:erp", "ce-type": "order.shipped" }
            const json = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { ...headers, "ce-id": "b-1", "ce-subject": "ORD%201", "content-type": "application/json" },
              body: JSON.stringify({ parcels: 2 }),
            })
            assert.deepStrictEqual([json.status, json.json], [202, { result: "buffered" }])
            const text = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { ...headers, "ce-id": "b-2", "content-type": "text/plain" },
              body: "left the dock",
            })
            assert.strictEqual(text.status, 202)
            const letters = yield* retired(f)
            assert.deepStrictEqual(
              letters.map((l) => [l.event.id, l.event.payload, l.event.correlation.map(String)]).sort(),
              [
                [
                  "urn:erp\u001Fb-1",
                  {
                    specversion: "1.0",
                    id: "b-1",
                    source: "urn:erp",
                    type: "order.shipped",
                    subject: "ORD 1",
                    datacontenttype: "application/json",
                    data: { parcels: 2 },
                  },
                  ["subject=ORD 1"],
                ],
                [
                  "urn:erp\u001Fb-2",
                  {
                    specversion: "1.0",
                    id: "b-2",
                    source: "urn:erp",
                    type: "order.shipped",
                    datacontenttype: "text/plain",
                    data: "left the dock",
                  },
                  [],
                ],
              ],
            )
          }),
        ),
      )

      it.effect("the same producer id from two callers is two events, not a duplicate", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const a = yield* f.raw("POST", "/events", { as: "pat", ...structured(ce) })
            const b = yield* f.raw("POST", "/events", { as: "ada", ...structured(ce) })
            assert.deepStrictEqual([a.json, b.json], [{ result: "buffered" }, { result: "buffered" }])
            assert.strictEqual((yield* retired(f)).length, 2)
          }),
        ),
      )

      it.effect(
        "malformed CloudEvents and control characters are 422 naming the attribute, and nothing is buffered",
        () =>
          Http.withServer((f) =>
            Effect.gen(function* () {
              const cases: ReadonlyArray<readonly [{ headers: Record<string, string>; body: string }, RegExp]> = [
                [structured({ ...ce, specversion: "0.3" }), /specversion/],
                [structured({ specversion: "1.0", id: "x", source: "s" }), /type/],
                [structured({ ...ce, id: "evt\u0000" }), /id: .*control/],
                [structured({ ...ce, source: "a\u001Fb" }), /source: .*control/],
                [structured({ ...ce, type: "" }), /type: .*empty/],
                [structured({ ...ce, Subject: "x" }), /Subject/],
                [structured({ ...ce, data: 1, data_base64: "AA==" }), /data_base64/],
                [
                  { headers: { "content-type": "application/cloudevents+json" }, body: "[1]" },
                  /cloudevents-batch\+json/,
                ],
                [{ headers: { "content-type": "application/cloudevents+json" }, body: "{" }, /body: not JSON/],
                [
                  {
                    headers: {
                      "ce-specversion": "1.0",
                      "ce-id": "1",
                      "ce-source": "s",
                      "content-type": "application/json",
                    },
                    body: "{}",
                  },
                  /ce-type/,
                ],
                [
                  {
                    headers: {
                      "ce-specversion": "1.0",
                      "ce-id": "1",
                      "ce-source": "s",
                      "ce-type": "t",
                      "content-type": "application/json",
                    },
                    body: "{not json",
                  },
                  /data: not JSON/,
                ],
                [
                  { headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "1", kind: "k\n" }) },
                  /kind: .*control/,
                ],
              ]
              for (const [request, pattern] of cases) {
                const answer = yield* f.raw("POST", "/events", { as: "pat", ...request })
                assert.strictEqual(answer.status, 422, `${request.body} → ${answer.text}`)
                const body = answer.json as { _tag: string; message: string }
                assert.strictEqual(body._tag, "InvalidRequest")
                assert.match(body.message, pattern)
              }
              // A media type the route does not read, with no ce-* headers, is 415.
              const unread = yield* f.raw("POST", "/events", {
                as: "pat",
                headers: { "content-type": "text/plain" },
                body: "hello",
              })
              assert.strictEqual(unread.status, 415)
              assert.match((unread.json as { _tag: string; message: string }).message, /content-type: "text\/plain"/)
              assert.strictEqual((yield* retired(f)).length, 0)
            }),
          ),
      )

      it.effect("a native body naming its own source is 422, and a reviewer may not deliver (403)", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const forged = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ id: "1", kind: "k", source: "agentplane://worklist" }),
            })
            assert.strictEqual(forged.status, 422)
            assert.match((forged.json as { message: string }).message, /source/)
            const denied = yield* Effect.flip(
              f.as("rita").events.deliver({ payload: { id: "1", kind: "k", correlation: [], payload: null } }),
            )
            assert.strictEqual(denied._tag, "Forbidden")
            assert.strictEqual((yield* retired(f)).length, 0)
          }),
        ),
      )

      it.effect("an event reaches only the caller's tenant", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const sub = wait("invoice.paid", CorrelationKey.make("subject", "INV-9"))
            yield* f.inTenant(Effect.flatMap(EventStore, (events) => events.subscribe(sub, Time.Timestamp.make(1))))
            const other = yield* f.raw("POST", "/events", { as: "bob", ...structured({ ...ce, subject: "INV-9" }) })
            assert.deepStrictEqual(other.json, { result: "buffered" })
            assert.strictEqual((yield* retired(f)).length, 0)
            assert.strictEqual((yield* retired(f, f.otherTenant)).length, 1)
            assert.strictEqual(
              (yield* f.as("ada").operations.deadLetters({ urlParams: { limit: 10 } })).items.length,
              0,
            )
          }),
        ),
      )
    })
  })
}
