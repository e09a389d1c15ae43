/**
 * `POST /events` (§8.2): one route for CloudEvents in structured and binary mode and for the
 * native shape. The body is read here rather than by the endpoint's payload decoder, because
 * which form it is depends on the headers; the endpoint still declares the native shape, which
 * is what the derived client sends.
 */
import { HttpApiBuilder, type HttpServerRequest } from "@effect/platform"
import { Effect, Either } from "effect"
import type { InboundEvent } from "../../domain/Event.js"
import { Runtime } from "../../runtime/Runtime.js"
import { Api, InvalidRequest, MAX_BODY_BYTES, PayloadTooLarge } from "../Api.js"
import * as Body from "../Body.js"
import type { Caller } from "../Caller.js"
import * as CloudEvents from "../CloudEvents.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function* () {
    const runtime = yield* Runtime
    return handlers.handleRaw("deliver", ({ request }) =>
      Effect.gen(function* () {
        const caller = yield* Guard.authorize("api:event.deliver")
        const event = yield* parse(request, caller)
        // Kinds under `agentplane.` are the plane's own events. Waits match on kind and key, not
        // on source, so a producer sending `agentplane.task.decided` with a task's key would
        // answer a four-eyes task without claiming it.
        if (event.kind.startsWith(RESERVED_KIND_PREFIX)) {
          return yield* new InvalidRequest({
            message: `kind: ${JSON.stringify(event.kind)} is reserved: kinds under "${RESERVED_KIND_PREFIX}" are the plane's own events`,
          })
        }
        // A run the event resumes is driven by the runtime in the background; the answer does
        // not wait for the run's own next effects.
        const outcome = yield* runtime.deliver(event).pipe(Guard.asTenant(caller))
        return Wire.deliveryAnswer(outcome)
      }),
    )
  }),
)

/** Kinds no caller may deliver: the plane emits them itself (task decisions, §7.7). */
export const RESERVED_KIND_PREFIX = "agentplane."

// internal

/** The event the request carries, in whichever form its headers announce. */
const parse = (request: HttpServerRequest.HttpServerRequest, caller: Caller) =>
  Effect.gen(function* () {
    const body = new Uint8Array(
      yield* Effect.mapError(request.arrayBuffer, (e) =>
        String(e.cause).includes("maxBytes exceeded")
          ? new PayloadTooLarge({ limit: MAX_BODY_BYTES, message: `the body exceeds ${MAX_BODY_BYTES} bytes` })
          : new InvalidRequest({ message: `body: could not be read: ${e.message}` }),
      ),
    )
    // Whichever the form, text in the body is UTF-8: another declared charset is 415, unread.
    const refused = Body.charsetRefusal(request.headers["content-type"])
    if (refused !== undefined) return yield* refused
    const media = (request.headers["content-type"] ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? ""
    const parsed: Either.Either<InboundEvent, string> =
      media === CloudEvents.STRUCTURED
        ? CloudEvents.fromStructured(body, caller)
        : request.headers["ce-specversion"] !== undefined
          ? CloudEvents.fromBinary(request.headers, body, caller)
          : media === "application/json"
            ? CloudEvents.fromNative(body, caller)
            : Either.left(
                `content-type: expected ${CloudEvents.STRUCTURED}, ce-* headers (binary mode) or application/json, not ${JSON.stringify(media)}`,
              )
    return yield* Either.mapLeft(parsed, (message) => new InvalidRequest({ message }))
  })
