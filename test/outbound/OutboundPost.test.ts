import { describe, it } from "@effect/vitest"
import { type Duration, Effect, Either } from "effect"
import { Webhook } from "standardwebhooks"
import * as Time from "../../src/domain/Time.js"
import type { OutboundPostError } from "../../src/errors/OutboundError.js"
import * as OutboundGuard from "../../src/outbound/OutboundGuard.js"
import * as OutboundPost from "../../src/outbound/OutboundPost.js"
import * as WebhookSignature from "../../src/outbound/WebhookSignature.js"
import { assert } from "../support/Assert.js"
import * as Receiver from "./Receiver.js"

const body = new TextEncoder().encode(JSON.stringify({ type: "run.failed", data: { run: "r_1" } }))

/** A poster whose guard allow-lists loopback and allows http, as these local receivers need. */
const poster = (options: OutboundGuard.Options = { allow: ["127.0.0.1"], allowHttp: true }) =>
  Effect.flatMap(OutboundGuard.make(options), OutboundPost.make)

const post = (p: OutboundPost.OutboundPost, url: string, timeout: Duration.DurationInput = "5 seconds") =>
  p.post({ url, body, headers: { "X-Trace": "abc" }, timeout })

const failure = (result: Either.Either<OutboundPost.Answer, OutboundPostError>): OutboundPostError =>
  Either.isLeft(result) ? result.left : assert.fail(`expected a failure, got ${result.right.status}`)

describe("OutboundPost", () => {
  it.scopedLive("an allow-listed loopback receiver gets the POST with the body and headers intact", () =>
    Effect.gen(function* () {
      const receiver = yield* Receiver.start(Receiver.ok)
      const secret = yield* WebhookSignature.generate
      const signed = WebhookSignature.sign({ id: "msg_1", at: Time.fromMillis(Date.now()), body, secrets: [secret] })
      const p = yield* poster()
      const answer = yield* p.post({
        url: receiver.url,
        body,
        headers: { ...signed, "Content-Type": "application/json; charset=utf-8", "User-Agent": "agentplane" },
        timeout: "5 seconds",
      })
      assert.strictEqual(answer.status, 204)
      assert.isTrue(answer.elapsedMillis >= 0)
      assert.strictEqual(receiver.received.length, 1)
      const [got] = receiver.received
      assert.strictEqual(got?.method, "POST")
      assert.deepStrictEqual(got?.body, Buffer.from(body))
      assert.strictEqual(got?.headers["content-type"], "application/json; charset=utf-8")
      assert.strictEqual(got?.headers["user-agent"], "agentplane")
      assert.strictEqual(got?.headers["webhook-id"], "msg_1")
      assert.strictEqual(got?.headers.traceparent, undefined)
      // The receiver's side of Standard Webhooks: what arrived verifies with the secret.
      const headers = Object.fromEntries(
        Object.entries(got?.headers ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]),
      )
      new Webhook(secret).verify(got?.body ?? Buffer.alloc(0), headers)
    }),
  )

  it.scopedLive("a redirect is not followed: the attempt reports the 3xx and the target sees nothing", () =>
    Effect.gen(function* () {
      const target = yield* Receiver.start(Receiver.ok)
      const redirecting = yield* Receiver.start(Receiver.status(302, { location: target.url }))
      const error = failure(yield* Effect.either(post(yield* poster(), redirecting.url)))
      assert.strictEqual(error._tag, "OutboundRedirected")
      assert.isTrue(error._tag === "OutboundRedirected" && error.status === 302)
      assert.isFalse(error.retryable)
      assert.strictEqual(redirecting.received.length, 1)
      assert.strictEqual(target.received.length, 0)
    }),
  )

  it.scopedLive("a loopback receiver that is not allow-listed is never contacted, by literal or by name", () =>
    Effect.gen(function* () {
      const receiver = yield* Receiver.start(Receiver.ok)
      const p = yield* poster({ allowHttp: true })
      const literal = failure(yield* Effect.either(post(p, receiver.url)))
      assert.strictEqual(literal._tag, "OutboundRefused")
      assert.match(literal.message, /^outbound connection to 127\.0\.0\.1 refused: 127\.0\.0\.1 is a loopback address/)
      // localhost is looked up (Node connects to literals without a lookup): the resolved address is refused.
      const named = failure(yield* Effect.either(post(p, `http://localhost:${receiver.port}/hook?token=t`)))
      assert.strictEqual(named._tag, "OutboundRefused")
      assert.isTrue(named._tag === "OutboundRefused" && named.host === "localhost" && named.address === "127.0.0.1")
      assert.doesNotMatch(named.message, /token/)
      assert.strictEqual(receiver.received.length, 0)
      // Allow-listing the name lets the same connection through.
      const allowed = yield* poster({ allow: ["localhost"], allowHttp: true })
      assert.strictEqual((yield* post(allowed, `http://localhost:${receiver.port}/hook`)).status, 204)
      assert.strictEqual(receiver.received.length, 1)
    }),
  )

  it.scopedLive(
    "every connection is checked on its own resolution: a name that rebinds to a forbidden address is refused",
    () =>
      Effect.gen(function* () {
        // 127.0.0.2 stands for the public address a rebinding name answers first: allow-listed
        // here, as a public address would be. The second answer, 127.0.0.1, is not.
        const receiver = yield* Receiver.start(Receiver.ok, "127.0.0.2")
        let calls = 0
        const p = yield* poster({
          allow: ["127.0.0.2"],
          allowHttp: true,
          resolve: async () => [{ address: calls++ === 0 ? "127.0.0.2" : "127.0.0.1", family: 4 }],
        })
        const url = `http://rebind.example:${receiver.port}/hook`
        assert.strictEqual((yield* post(p, url)).status, 204)
        const error = failure(yield* Effect.either(post(p, url)))
        assert.isTrue(error._tag === "OutboundRefused" && error.address === "127.0.0.1", error.message)
        assert.strictEqual(calls, 2)
        assert.strictEqual(receiver.received.length, 1)
      }),
  )

  it.scopedLive("http is refused unless allowHttp", () =>
    Effect.gen(function* () {
      const receiver = yield* Receiver.start(Receiver.ok)
      const error = failure(yield* Effect.either(post(yield* poster({ allow: ["127.0.0.1"] }), receiver.url)))
      assert.isTrue(error._tag === "OutboundRefused" && error.reason._tag === "Http", error.message)
      assert.strictEqual(receiver.received.length, 0)
    }),
  )

  it.scopedLive("a receiver that never answers ends in the retryable timeout", () =>
    Effect.gen(function* () {
      const receiver = yield* Receiver.start(Receiver.never)
      const started = Date.now()
      const error = failure(yield* Effect.either(post(yield* poster(), receiver.url, "300 millis")))
      assert.strictEqual(error._tag, "OutboundTimeout")
      assert.isTrue(error.retryable)
      assert.isTrue(Date.now() - started < 3_000, "the timeout ends the attempt promptly")
      assert.strictEqual(receiver.received.length, 1)
    }),
  )

  it.scopedLive("a 500, a 408 and a 429 are retryable, a 400 is not", () =>
    Effect.gen(function* () {
      const failing = yield* Receiver.start(Receiver.status(500))
      const rejecting = yield* Receiver.start(Receiver.status(400))
      const p = yield* poster()
      const failed = failure(yield* Effect.either(post(p, failing.url)))
      assert.isTrue(failed._tag === "OutboundServerFailed" && failed.status === 500 && failed.retryable)
      const rejected = failure(yield* Effect.either(post(p, rejecting.url)))
      assert.isTrue(rejected._tag === "OutboundRejected" && rejected.status === 400 && !rejected.retryable)
      for (const status of [408, 429]) {
        const busy = yield* Receiver.start(Receiver.status(status))
        const later = failure(yield* Effect.either(post(p, busy.url)))
        assert.isTrue(later._tag === "OutboundThrottled" && later.status === status && later.retryable, `${status}`)
      }
    }),
  )

  it.scopedLive(
    "the attempt reads the status only: a receiver stalling its body does not hold the connection open",
    () =>
      Effect.gen(function* () {
        const receiver = yield* Receiver.start(Receiver.stall)
        const answer = yield* post(yield* poster(), receiver.url, "2 seconds")
        assert.strictEqual(answer.status, 200)
        // The request is aborted once the status is read, so the receiver sees its response close.
        const closedAt = Date.now() + 1_000
        while (receiver.closed() === 0 && Date.now() < closedAt) yield* Effect.sleep("20 millis")
        assert.strictEqual(receiver.closed(), 1)
      }),
  )

  it.scopedLive("https connections pass the guard's lookup too: https://localhost is refused before any TLS", () =>
    Effect.gen(function* () {
      const receiver = yield* Receiver.start(Receiver.ok)
      const error = failure(yield* Effect.either(post(yield* poster({}), `https://localhost:${receiver.port}/hook`)))
      assert.isTrue(error._tag === "OutboundRefused" && error.address === "127.0.0.1", error.message)
      assert.strictEqual(receiver.received.length, 0)
    }),
  )

  it.scopedLive("a name that does not resolve, and a URL that does not parse", () =>
    Effect.gen(function* () {
      const p = yield* poster({ resolve: async () => [] })
      const unresolved = failure(yield* Effect.either(post(p, "https://nowhere.example/hook")))
      assert.isTrue(unresolved._tag === "OutboundUnreachable" && unresolved.detail === "ENOTFOUND", unresolved.message)
      assert.isTrue(unresolved.retryable)
      const malformed = failure(yield* Effect.either(post(p, "https://user:secret@ bad url")))
      assert.isTrue(malformed._tag === "OutboundRefused" && malformed.reason._tag === "Malformed", malformed.message)
      assert.doesNotMatch(malformed.message, /secret/)
      assert.isFalse(malformed.retryable)
    }),
  )

  it.scopedLive("a refused connection is the retryable unreachable error", () =>
    Effect.gen(function* () {
      const port = yield* Effect.scoped(Effect.map(Receiver.start(Receiver.ok), (r) => r.port))
      const error = failure(yield* Effect.either(post(yield* poster(), `http://127.0.0.1:${port}/hook`)))
      assert.isTrue(error._tag === "OutboundUnreachable" && error.detail === "ECONNREFUSED", error.message)
      assert.isTrue(error.retryable)
    }),
  )
})
