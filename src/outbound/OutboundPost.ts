/**
 * One outbound POST attempt through the outbound guard: the answer's status and the time it
 * took, or a typed failure that says whether a retry may succeed. Retries, backoff and dead
 * letters belong to the caller; this module makes exactly one attempt.
 *
 * Built on @effect/platform's HttpClient over @effect/platform-node's Node client rather than on
 * `node:http` by hand: `NodeHttpClient.makeAgent` takes Node's agent options, so the guard's
 * `lookup` reaches `net.connect` for every connection of both the http and the https agent; the
 * client never follows redirects unless `HttpClient.followRedirects` is applied, which it is not
 * here; interruption (the timeout) aborts the request through its AbortSignal. Tracer
 * propagation is turned off: a receiver is a third party and gets no `traceparent` of ours.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Duration, Effect, Either, type Scope } from "effect"
import {
  type OutboundPostError,
  OutboundRedirected,
  OutboundRefused,
  OutboundRejected,
  OutboundServerFailed,
  OutboundThrottled,
  OutboundTimeout,
  OutboundUnreachable,
} from "../errors/OutboundError.js"
import type * as OutboundGuard from "./OutboundGuard.js"

export interface Request {
  readonly url: string
  readonly body: Uint8Array
  /** Sent as given; `content-type` defaults to application/json. */
  readonly headers: Readonly<Record<string, string>>
  /** From the start of the attempt to the answer's status line, on the Effect `Clock`. */
  readonly timeout: Duration.DurationInput
}

/** A 2xx answer. */
export interface Answer {
  readonly status: number
  readonly elapsedMillis: number
}

export interface OutboundPost {
  /** POSTs once; succeeds on 2xx, fails with an `OutboundPostError` (each says `retryable`) otherwise. */
  readonly post: (request: Request) => Effect.Effect<Answer, OutboundPostError>
}

/** A poster whose every connection passes `guard`; its agents are destroyed when the scope closes. */
export const make = (guard: OutboundGuard.OutboundGuard): Effect.Effect<OutboundPost, never, Scope.Scope> =>
  Effect.gen(function* () {
    const agent = yield* NodeHttpClient.makeAgent({ lookup: guard.lookup })
    const client = (yield* Effect.provideService(NodeHttpClient.make, NodeHttpClient.HttpAgent, agent)).pipe(
      HttpClient.withTracerPropagation(false),
    )

    const post = (request: Request): Effect.Effect<Answer, OutboundPostError> =>
      Effect.gen(function* () {
        const url = yield* Effect.try({
          try: () => new URL(request.url),
          // Not the text itself in the error: it may be a URL with credentials, one typo away.
          catch: () => new OutboundRefused({ host: "(not a URL)", reason: { _tag: "Malformed" } }),
        })
        const host = url.hostname.replace(/^\[(.*)\]$/, "$1")
        const checked = guard.checkUrl(url)
        if (Either.isLeft(checked)) return yield* checked.left
        const { "content-type": contentType = "application/json", ...headers } = lowerKeys(request.headers)
        const outgoing = HttpClientRequest.post(url).pipe(
          HttpClientRequest.setHeaders(headers),
          HttpClientRequest.bodyUint8Array(request.body, contentType),
        )
        const timeoutMillis = Duration.toMillis(request.timeout)
        // withScope aborts the request when the scope closes: the status is all an attempt
        // reads, and a receiver's body, however large or slow, is never waited for.
        const [elapsed, status] = yield* HttpClient.withScope(client)
          .execute(outgoing)
          .pipe(
            Effect.map((response) => response.status),
            Effect.scoped,
            Effect.timed,
            Effect.timeoutFail({
              duration: request.timeout,
              onTimeout: () => new OutboundTimeout({ host, timeoutMillis }),
            }),
            Effect.catchTag("RequestError", "ResponseError", (error) =>
              Effect.fail(
                error.cause instanceof OutboundRefused
                  ? error.cause
                  : new OutboundUnreachable({ host, detail: detailOf(error.cause) }),
              ),
            ),
          )
        const elapsedMillis = Duration.toMillis(elapsed)
        if (status >= 200 && status < 300) return { status, elapsedMillis }
        if (status >= 300 && status < 400) return yield* new OutboundRedirected({ host, status, elapsedMillis })
        if (status >= 500 && status < 600) return yield* new OutboundServerFailed({ host, status, elapsedMillis })
        if (status === 408 || status === 429) return yield* new OutboundThrottled({ host, status, elapsedMillis })
        return yield* new OutboundRejected({ host, status, elapsedMillis })
      })

    return { post }
  })

// internal

const lowerKeys = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))

/** A Node error's code ("ECONNREFUSED") or message; never the URL, which can carry credentials. */
const detailOf = (cause: unknown): string => {
  if (typeof cause === "object" && cause !== null) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === "string") return code
    const message = (cause as { message?: unknown }).message
    if (typeof message === "string") return message
  }
  return String(cause)
}
