/**
 * `POST /events` driven by the official `cloudevents` SDK's binary and structured emitters
 * against a real server, on each backend: one event is stored as one envelope whichever mode
 * carried it, with every attribute the producer sent, and the run that receives it reads them.
 * Batched mode, the webhook handshake, bad base64, extension names and `agentplanekeys` too.
 */
import { describe, layer } from "@effect/vitest"
import { CloudEvent, emitterFor, httpTransport, Mode } from "cloudevents"
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { Subscription } from "../../src/domain/Event.js"
import { generateRunId, StepId } from "../../src/domain/Ids.js"
import type { Json } from "../../src/domain/Json.js"
import * as Time from "../../src/domain/Time.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Http from "../support/Http.js"
import * as Definitions from "./Definitions.js"

const FAR = Time.Timestamp.make(4_000_000_000)

/** Every unclaimed event of the tenant as (id, payload), retired to dead letters first. */
const stored = (f: Http.Fixture) =>
  f.inTenant(
    Effect.flatMap(EventStore, (events) => Effect.zipRight(events.sweepUnclaimed(FAR, "test"), events.deadLetters(50))),
  )

/** Sends `event` with the SDK's emitter in `mode`, as `caller`; the transport's answer. */
const emit = (f: Http.Fixture, mode: Mode, event: CloudEvent<unknown>, caller: Http.CallerName = "pat") =>
  Effect.promise(() =>
    emitterFor(httpTransport(`${f.baseUrl}/events`), { mode })(event, {
      headers: { authorization: `Bearer ${f.tokens[caller]}` },
    }),
  ) as Effect.Effect<{ readonly body: string; readonly headers: Record<string, unknown> }>

/** Attributes every test event carries besides its id and data. */
const attributes = {
  source: "https://billing.example/",
  type: "invoice.paid",
  subject: "INV-1",
  time: "2026-11-30T09:15:00.000Z",
  dataschema: "https://billing.example/schemas/paid.json",
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  priority: 5,
  // 26 characters: over the spec's advisory 20, which the SDK sends anyway.
  abcdefghijklmnopqrstuvwxyz: "long",
}

const wait = (key: CorrelationKey.CorrelationKey) =>
  new Subscription({
    run: generateRunId(),
    case: Option.none(),
    effect: EffectKey.make("b".repeat(64)),
    step: StepId.make(2),
    phase: "forward",
    kind: "invoice.paid",
    correlation: [key],
  })

for (const backend of Http.backends()) {
  describe(`http CloudEvents through the SDK (${backend.name})`, () => {
    layer(backend.layer, { excludeTestServices: true })((it) => {
      it.effect("binary and structured mode store one envelope, every attribute kept, data by its media type", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const samples: ReadonlyArray<readonly [string, Record<string, unknown>, Record<string, Json>]> = [
              ["json", { data: { paid: 40 } }, { datacontenttype: "application/json", data: { paid: 40 } }],
              [
                "xml",
                { datacontenttype: "application/xml", data: "<paid amount='40'/>" },
                { datacontenttype: "application/xml", data: "<paid amount='40'/>" },
              ],
              [
                "octets",
                { datacontenttype: "application/octet-stream", data: new Uint8Array([0, 1, 2, 255]) },
                { datacontenttype: "application/octet-stream", data_base64: "AAEC/w==" },
              ],
            ]
            for (const [name, data] of samples) {
              for (const mode of [Mode.BINARY, Mode.STRUCTURED]) {
                const event = new CloudEvent({ ...attributes, ...data, id: `${name}-${mode}` })
                const answer = yield* emit(f, mode, event)
                assert.deepStrictEqual(JSON.parse(answer.body), { result: "buffered" }, `${name} ${mode}`)
              }
            }
            const byId = new Map((yield* stored(f)).map((l) => [l.event.id, l.event.payload]))
            for (const [name, , expected] of samples) {
              const envelope = {
                specversion: "1.0",
                id: `${name}-${Mode.BINARY}`,
                source: attributes.source,
                type: attributes.type,
                subject: attributes.subject,
                time: attributes.time,
                dataschema: attributes.dataschema,
                abcdefghijklmnopqrstuvwxyz: "long",
                // Extensions are kept in their canonical string form, as binary mode carries them.
                priority: "5",
                traceparent: attributes.traceparent,
                ...expected,
              }
              assert.deepStrictEqual(byId.get(`${attributes.source}\u001F${name}-${Mode.BINARY}`), envelope, name)
              assert.deepStrictEqual(
                byId.get(`${attributes.source}\u001F${name}-${Mode.STRUCTURED}`),
                { ...envelope, id: `${name}-${Mode.STRUCTURED}` },
                `${name}: structured mode stores what binary mode stores`,
              )
            }
          }),
        ),
      )

      it.effect("the run an event resumes reads its attributes and data from the payload", () =>
        Http.withServer(
          (f) =>
            Effect.gen(function* () {
              const invoice = `INV-${Math.random()}`
              const started = yield* f.inTenant(Definitions.start(f.runtime, Definitions.awaitsPayment, invoice))
              const event = new CloudEvent({ ...attributes, id: "resume-1", subject: invoice, data: { paid: 40 } })
              const answer = yield* emit(f, Mode.BINARY, event)
              assert.deepStrictEqual(JSON.parse(answer.body), { result: "resumed", run: started.run })
              yield* f.runtime.idle
              const records = yield* f.inTenant(Effect.flatMap(JournalStore, (j) => j.read(started.run, 1)))
              const received = records.flatMap((r) => (r.kind.kind === "EffectDone" ? [r.kind.output] : []))
              const payload = received.find((o) => typeof o === "object" && o !== null && "specversion" in o) as
                | Record<string, Json>
                | undefined
              assert.deepStrictEqual(
                [payload?.time, payload?.traceparent, payload?.datacontenttype, payload?.data],
                [attributes.time, attributes.traceparent, "application/json", { paid: 40 }],
              )
            }),
          { definitions: [Definitions.awaitsPayment] },
        ),
      )

      it.effect("data_base64 that is not strict base64 is 422, and nothing is stored", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            for (const bad of ["not base64!", "AAE", "AA=E", "AAE=\n", 7]) {
              const answer = yield* f.raw("POST", "/events", {
                as: "pat",
                headers: { "content-type": "application/cloudevents+json" },
                body: JSON.stringify({ specversion: "1.0", id: "b", source: "s", type: "t", data_base64: bad }),
              })
              assert.strictEqual(answer.status, 422, `${JSON.stringify(bad)} → ${answer.text}`)
              assert.match((answer.json as { message: string }).message, /^data_base64: is not base64/)
            }
            assert.strictEqual((yield* stored(f)).length, 0)
          }),
        ),
      )

      it.effect("extension names follow one rule in both modes: a-z0-9, 1 … 64 characters", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const base = { specversion: "1.0", source: "s", type: "t" }
            const headers = { "ce-specversion": "1.0", "ce-source": "s", "ce-type": "t" }
            const send = (mode: "structured" | "binary", id: string, name: string) =>
              mode === "structured"
                ? f.raw("POST", "/events", {
                    as: "pat",
                    headers: { "content-type": "application/cloudevents+json" },
                    body: JSON.stringify({ ...base, id, [name]: "v" }),
                  })
                : f.raw("POST", "/events", { as: "pat", headers: { ...headers, "ce-id": id, [`ce-${name}`]: "v" } })
            for (const mode of ["structured", "binary"] as const) {
              for (const name of ["a".repeat(65), "bad_name", "bad-name"]) {
                const answer = yield* send(mode, `${mode}-${name}`, name)
                assert.strictEqual(answer.status, 422, `${mode} ${name}: ${answer.text}`)
                assert.match((answer.json as { message: string }).message, /is not a CloudEvents attribute name/)
              }
              const long = yield* send(mode, `${mode}-ok`, "x".repeat(64))
              assert.strictEqual(long.status, 202, `${mode}: ${long.text}`)
            }
            const kept = (yield* stored(f)).map((l) => (l.event.payload as Record<string, Json>)["x".repeat(64)])
            assert.deepStrictEqual(kept, ["v", "v"])
          }),
        ),
      )

      it.effect("batched mode answers each event in order; one bad event refuses the batch unread", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const one = (id: string, extra: Record<string, unknown> = {}) => ({
              specversion: "1.0",
              id,
              source: "urn:erp",
              type: "order.shipped",
              data: { id },
              ...extra,
            })
            const batch = (events: ReadonlyArray<unknown>) =>
              f.raw("POST", "/events", {
                as: "pat",
                headers: { "content-type": "application/cloudevents-batch+json" },
                body: JSON.stringify(events),
              })
            const refused = yield* batch([
              one("a"),
              one("b", { type: "" }),
              one("c", { data: undefined, data_base64: "?" }),
            ])
            assert.strictEqual(refused.status, 422, refused.text)
            const message = (refused.json as { message: string }).message
            assert.match(message, /\[1\]\.type: .*empty/)
            assert.match(message, /\[2\]\.data_base64: is not base64/)
            assert.strictEqual((yield* stored(f)).length, 0)
            const answered = yield* batch([one("a"), one("b"), one("a")])
            assert.deepStrictEqual(
              [answered.status, answered.json],
              [202, { items: [{ result: "buffered" }, { result: "buffered" }, { result: "duplicate" }] }],
            )
            const tooMany = yield* batch(Array.from({ length: 101 }, (_, i) => one(`m-${i}`)))
            assert.strictEqual(tooMany.status, 422)
            assert.match(
              (tooMany.json as { message: string }).message,
              /101 events in one batch, over the limit of 100/,
            )
            assert.deepStrictEqual((yield* stored(f)).map((l) => l.event.id).sort(), [
              "urn:erp\u001Fa",
              "urn:erp\u001Fb",
            ])
          }),
        ),
      )

      it.effect("the webhook handshake: OPTIONS with WebHook-Request-Origin grants a producer's credential", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const origin = { "webhook-request-origin": "eventemitter.example.com" }
            const granted = yield* f.raw("OPTIONS", "/events", { as: "pat", headers: origin })
            assert.strictEqual(granted.status, 200, granted.text)
            assert.deepStrictEqual(
              [
                granted.headers.get("webhook-allowed-origin"),
                granted.headers.get("webhook-allowed-rate"),
                granted.headers.get("allow"),
              ],
              ["eventemitter.example.com", "*", "OPTIONS, POST"],
            )
            assert.strictEqual((yield* f.raw("OPTIONS", "/events", { headers: origin })).status, 401)
            // A reviewer may not deliver, so it is not granted delivery either.
            assert.strictEqual((yield* f.raw("OPTIONS", "/events", { as: "rita", headers: origin })).status, 403)
            const bare = yield* f.raw("OPTIONS", "/events", { as: "pat" })
            assert.strictEqual(bare.status, 422)
            assert.match((bare.json as { message: string }).message, /webhook-request-origin/)
          }),
        ),
      )

      it.effect("agentplanekeys carries keys beyond subject, in both modes; malformed it is 422", () =>
        Http.withServer((f) =>
          Effect.gen(function* () {
            const keys = JSON.stringify([{ namespace: "order", value: "ORD-1" }])
            for (const mode of [Mode.BINARY, Mode.STRUCTURED]) {
              const key = CorrelationKey.make("order", `ORD-${mode}`)
              const sub = wait(key)
              yield* f.inTenant(Effect.flatMap(EventStore, (events) => events.subscribe(sub, Time.Timestamp.make(1))))
              const event = new CloudEvent({
                ...attributes,
                id: `keys-${mode}`,
                agentplanekeys: keys.replace("ORD-1", `ORD-${mode}`),
                data: { paid: 1 },
              })
              assert.deepStrictEqual(JSON.parse((yield* emit(f, mode, event)).body), { result: "buffered" })
              const claimed = yield* f.inTenant(Effect.flatMap(EventStore, (events) => events.claimFor(sub, FAR)))
              assert.deepStrictEqual(
                Option.map(claimed, (b) => b.event.correlation.map(String).sort()),
                Option.some([`order=ORD-${mode}`, "subject=INV-1"]),
                mode,
              )
            }
            const malformed = yield* f.raw("POST", "/events", {
              as: "pat",
              headers: {
                "ce-specversion": "1.0",
                "ce-id": "k",
                "ce-source": "s",
                "ce-type": "t",
                "ce-agentplanekeys": "[{",
              },
            })
            assert.strictEqual(malformed.status, 422)
            assert.match((malformed.json as { message: string }).message, /^ce-agentplanekeys: not JSON/)
          }),
        ),
      )
    })
  })
}
