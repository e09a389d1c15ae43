import { describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import * as Time from "../../src/domain/Time.js"
import * as WebhookSignature from "../../src/outbound/WebhookSignature.js"
import { assert } from "../support/Assert.js"

const body = new TextEncoder().encode(JSON.stringify({ type: "task.waiting", data: { task: "t_1" } }))
const payload = new TextDecoder().decode(body)

// standardwebhooks checks the timestamp against its own clock (five minutes' tolerance), so the
// test signs at the real now, as the deliverer will sign at the attempt's instant.
const now = () => Time.fromMillis(Date.now())

const verifies = (secret: string, headers: WebhookSignature.SignedHeaders, text = payload): boolean => {
  try {
    new Webhook(secret).verify(text, { ...headers })
    return true
  } catch {
    return false
  }
}

describe("WebhookSignature", () => {
  it.effect("a receiver's standardwebhooks verifier accepts the signed delivery", () =>
    Effect.gen(function* () {
      const secret = yield* WebhookSignature.generate
      const at = now()
      const headers = WebhookSignature.sign({ id: "msg_1", at, body, secrets: [secret] })
      assert.strictEqual(headers["webhook-id"], "msg_1")
      assert.strictEqual(headers["webhook-timestamp"], String(at))
      assert.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]+={0,2}$/)
      assert.deepStrictEqual(new Webhook(secret).verify(payload, { ...headers }), JSON.parse(payload))
    }),
  )

  it.effect("a rotated (different) secret does not verify", () =>
    Effect.gen(function* () {
      const secret = yield* WebhookSignature.generate
      const rotated = yield* WebhookSignature.generate
      const headers = WebhookSignature.sign({ id: "msg_2", at: now(), body, secrets: [secret] })
      assert.isFalse(verifies(rotated, headers))
    }),
  )

  it.effect("during a rotation both secrets verify, and a third does not", () =>
    Effect.gen(function* () {
      const next = yield* WebhookSignature.generate
      const previous = yield* WebhookSignature.generate
      const other = yield* WebhookSignature.generate
      const headers = WebhookSignature.sign({ id: "msg_3", at: now(), body, secrets: [next, previous] })
      assert.strictEqual(headers["webhook-signature"].split(" ").length, 2)
      assert.isTrue(verifies(next, headers))
      assert.isTrue(verifies(previous, headers))
      assert.isFalse(verifies(other, headers))
    }),
  )

  it.effect("the id, the timestamp and the body are all signed", () =>
    Effect.gen(function* () {
      const secret = yield* WebhookSignature.generate
      const at = now()
      const headers = WebhookSignature.sign({ id: "msg_4", at, body, secrets: [secret] })
      assert.isTrue(verifies(secret, headers))
      assert.isFalse(verifies(secret, { ...headers, "webhook-id": "msg_5" }))
      assert.isFalse(verifies(secret, { ...headers, "webhook-timestamp": String(at - 1) }))
      assert.isFalse(verifies(secret, headers, payload.replace("t_1", "t_2")))
    }),
  )

  it.effect("the signature depends only on its inputs: the same instant signs the same bytes", () =>
    Effect.gen(function* () {
      const secret = yield* WebhookSignature.generate
      const at = Time.Timestamp.make(1_700_000_000)
      const once = WebhookSignature.sign({ id: "msg_6", at, body, secrets: [secret] })
      const again = WebhookSignature.sign({ id: "msg_6", at, body, secrets: [secret] })
      assert.deepStrictEqual(once, again)
      assert.strictEqual(once["webhook-signature"], new Webhook(secret).sign("msg_6", new Date(at * 1000), payload))
    }),
  )

  it.effect("a generated secret is whsec_ and 32 random bytes in base64", () =>
    Effect.gen(function* () {
      const a = yield* WebhookSignature.generate
      const b = yield* WebhookSignature.generate
      assert.match(a, /^whsec_/)
      assert.strictEqual(Buffer.from(a.slice("whsec_".length), "base64").length, 32)
      assert.notStrictEqual(a, b)
      assert.isTrue(Schema.is(WebhookSignature.WebhookSecret)(a))
    }),
  )

  it("a secret without the whsec_ prefix, empty, or not base64 does not decode", () => {
    const is = Schema.is(WebhookSignature.WebhookSecret)
    assert.isFalse(is("c2VjcmV0"))
    assert.isFalse(is("whsec_"))
    assert.isFalse(is("whsec_not base64!"))
    assert.isTrue(is("whsec_c2VjcmV0c2VjcmV0"))
  })
})
