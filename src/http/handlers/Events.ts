/**
 * `POST /events` (§8.2): one route for CloudEvents in structured, binary and batched mode and for
 * the native shape. The body is read here rather than by the endpoint's payload decoder, because
 * which form it is depends on the headers. `OPTIONS /events` is the CloudEvents webhook
 * validation handshake.
 */
import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either } from "effect"
import type { InboundEvent } from "../../domain/Event.js"
import { Runtime } from "../../runtime/Runtime.js"
import { Api, InvalidRequest, UnsupportedMediaType } from "../Api.js"
import * as Body from "../Body.js"
import type { Caller } from "../Caller.js"
import * as CloudEvents from "../CloudEvents.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function* () {
    const runtime = yield* Runtime
    const deliverOne = (event: InboundEvent, caller: Caller) =>
      // A run the event resumes is driven by the runtime in the background; the answer does not
      // wait for the run's own next effects.
      Effect.map(runtime.deliver(event).pipe(Guard.asTenant(caller)), Wire.deliveryAnswer)
    return handlers
      .handleRaw("deliver", ({ request }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:event.deliver")
          const parsed = yield* parse(request, caller)
          if (!Array.isArray(parsed)) {
            const event = parsed as InboundEvent
            yield* reserved(event, "")
            return yield* deliverOne(event, caller)
          }
          // A batch: every event is checked before any is delivered, so a refusal delivers none.
          // They are delivered in order, each its own delivery; a store outage part-way answers
          // 503 with the first ones delivered, and the retry answers those `duplicate`.
          yield* Effect.forEach(parsed, (event, i) => reserved(event, `[${i}].`), { discard: true })
          return { items: yield* Effect.forEach(parsed, (event) => deliverOne(event, caller)) }
        }),
      )
      .handle("handshake", ({ headers }) =>
        Effect.gen(function* () {
          // The credential the sender will deliver with must be allowed to deliver: the handshake
          // grants nothing a delivery would not.
          yield* Guard.authorize("api:event.deliver")
          return HttpServerResponse.empty({
            status: 200,
            headers: {
              "webhook-allowed-origin": headers["webhook-request-origin"],
              // No rate is imposed on a sender: the body limit and the store bound it.
              "webhook-allowed-rate": "*",
              allow: "OPTIONS, POST",
            },
          })
        }),
      )
  }),
)

/** Kinds no caller may deliver: the plane emits them itself (task decisions, §7.7). */
export const RESERVED_KIND_PREFIX = "agentplane."

// internal

/**
 * Kinds under `agentplane.` are the plane's own events. Waits match on kind and key, not on
 * source, so a producer sending `agentplane.task.decided` with a task's key would answer a
 * four-eyes task without claiming it.
 */
const reserved = (event: InboundEvent, prefix: string): Effect.Effect<void, InvalidRequest> =>
  event.kind.startsWith(RESERVED_KIND_PREFIX)
    ? new InvalidRequest({
        message: `${prefix}kind: ${JSON.stringify(event.kind)} is reserved: kinds under "${RESERVED_KIND_PREFIX}" are the plane's own events`,
      })
    : Effect.void

/** The event (or, in batched mode, the events) the request carries, in whichever form its headers announce. */
const parse = (request: HttpServerRequest.HttpServerRequest, caller: Caller) =>
  Effect.gen(function* () {
    const body = new Uint8Array(
      // An overlong body never arrives here as a `RequestError`: `Body.strict` reads it and raises
      // its tagged `PayloadTooLarge`, which `Server.refusals` answers as 413.
      yield* Effect.mapError(
        request.arrayBuffer,
        (e) => new InvalidRequest({ message: `body: could not be read: ${e.reason}` }),
      ),
    )
    // Whichever the form, text in the body is UTF-8: another declared charset is 415, unread.
    const refused = Body.charsetRefusal(request.headers["content-type"])
    if (refused !== undefined) return yield* refused
    const media = (request.headers["content-type"] ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? ""
    // The content type decides structured and batched mode before any ce-* header does (binding §3).
    const binary = request.headers["ce-specversion"] !== undefined
    if (media !== CloudEvents.STRUCTURED && media !== CloudEvents.BATCH && !binary && media !== "application/json") {
      return yield* new UnsupportedMediaType({
        message: `content-type: ${JSON.stringify(media)} is not read here; send ${CloudEvents.STRUCTURED}, ${CloudEvents.BATCH}, ce-* headers (binary mode) or application/json (native)`,
      })
    }
    const parsed: Either.Either<InboundEvent | ReadonlyArray<InboundEvent>, string> =
      media === CloudEvents.STRUCTURED
        ? CloudEvents.fromStructured(body, caller)
        : media === CloudEvents.BATCH
          ? CloudEvents.fromBatch(body, caller)
          : binary
            ? CloudEvents.fromBinary(request.headers, body, caller)
            : CloudEvents.fromNative(body, caller)
    return yield* Either.mapLeft(parsed, (message) => new InvalidRequest({ message }))
  })
