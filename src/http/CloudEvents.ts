/**
 * Inbound events over HTTP (§7.9, §8.2): CloudEvents 1.0 in structured mode
 * (`application/cloudevents+json`) or binary mode (`ce-*` headers), or the native shape. Whatever
 * the form, the event's `source` is the authenticated caller, never what the body claims: a
 * producer cannot speak for another, nor reach another producer's dedup keys.
 */
import { Either, ParseResult, Schema } from "effect"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import { DEDUP_SEPARATOR, InboundEvent } from "../domain/Event.js"
import * as Json from "../domain/Json.js"
import type { Caller } from "./Caller.js"
import { AnyJson, Name, NativeEvent } from "./Wire.js"

/** The media type of a structured-mode CloudEvent. */
export const STRUCTURED = "application/cloudevents+json"

/** The source every event from `caller` carries; the actor is escaped so it cannot forge a separator. */
export const callerSource = (caller: Caller): string => `agentplane://caller/${encodeURIComponent(caller.actor)}`

/** The attributes agentplane reads; the others CloudEvents 1.0 defines are accepted and ignored. */
export const CloudEvent = Schema.Struct({
  specversion: Schema.Literal("1.0"),
  id: Name,
  source: Name,
  type: Name,
  subject: Schema.optional(Name),
  datacontenttype: Schema.optional(Schema.String),
  dataschema: Schema.optional(Schema.String),
  time: Schema.optional(Schema.String),
  data: Schema.optional(AnyJson),
  data_base64: Schema.optional(Schema.String),
})
export type CloudEvent = typeof CloudEvent.Type

/**
 * A CloudEvent as the caller's event: `id` joins the producer's source and id with U+001F, `kind`
 * is `type`, `payload` is `data` (absent: `null`), and a `subject` is the single key
 * `("subject", subject)`.
 */
export const toInbound = (ce: CloudEvent, caller: Caller): InboundEvent =>
  new InboundEvent({
    source: callerSource(caller),
    id: `${ce.source}${DEDUP_SEPARATOR}${ce.id}`,
    kind: ce.type,
    correlation: ce.subject === undefined ? [] : [CorrelationKey.make("subject", ce.subject)],
    // Binary data has no JSON form; it travels as its base64 text.
    payload: ce.data ?? ce.data_base64 ?? null,
  })

/** A structured-mode body. */
export const fromStructured = (body: Uint8Array, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(utf8(body)), (e) => `body: ${e}`)
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return yield* Either.left("body: a structured CloudEvent is a JSON object (batches are not accepted)")
    }
    for (const key of Object.keys(json)) {
      if (!KNOWN.has(key) && !EXTENSION_NAME.test(key)) {
        return yield* Either.left(`${key}: is not a CloudEvents attribute name (lowercase a-z, 0-9, at most 20)`)
      }
    }
    if ("data" in json && "data_base64" in json) {
      return yield* Either.left("data_base64: an event carries data or data_base64, not both")
    }
    const ce = yield* Either.mapLeft(decodeCloudEvent(json), describe)
    return toInbound(ce, caller)
  })

/** A binary-mode request: attributes in `ce-*` headers, the body is `data` as its content type says. */
export const fromBinary = (
  headers: Readonly<Record<string, string | undefined>>,
  body: Uint8Array,
  caller: Caller,
): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const attributes: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(headers)) {
      if (!name.startsWith("ce-") || value === undefined) continue
      const key = name.slice(3)
      if (key === "data" || key === "data_base64") return yield* Either.left(`${name}: is not a header attribute`)
      // Header values are percent-encoded where they hold characters HTTP cannot carry (binding §3.1.3.2).
      attributes[key] = yield* Either.try({
        try: () => decodeURIComponent(value),
        catch: () => `${name}: malformed percent-encoding`,
      })
    }
    const contentType = headers["content-type"]
    if (contentType !== undefined) attributes.datacontenttype = contentType
    if (body.length > 0) {
      const media = (contentType ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? ""
      if (media === "application/json" || media.endsWith("+json")) {
        attributes.data = yield* Either.mapLeft(Json.parse(utf8(body)), (e) => `data: ${e}`)
      } else if (media.startsWith("text/")) {
        attributes.data = utf8(body)
      } else {
        attributes.data_base64 = Buffer.from(body).toString("base64")
      }
    }
    const ce = yield* Either.mapLeft(decodeCloudEvent(attributes), (e) => describe(e, "ce-"))
    return toInbound(ce, caller)
  })

/** The native shape `{id, kind, correlation, payload}`; unknown fields are refused. */
export const fromNative = (body: Uint8Array, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(utf8(body)), (e) => `body: ${e}`)
    const native = yield* Either.mapLeft(decodeNative(json), (e) => describe(e))
    return nativeToInbound(native, caller)
  })

/** The native shape, already decoded, as the caller's event. */
export const nativeToInbound = (native: typeof NativeEvent.Type, caller: Caller): InboundEvent =>
  new InboundEvent({
    source: callerSource(caller),
    id: native.id,
    kind: native.kind,
    correlation: CorrelationKey.dedupe(native.correlation.map((k) => CorrelationKey.make(k.namespace, k.value))),
    payload: native.payload,
  })

/** Every problem of a parse error, each as `<field>: <what is wrong>`, so the message names the field. */
export const describe = (error: ParseResult.ParseError, prefix = ""): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `${issue.path.length === 0 ? "body" : `${prefix}${issue.path.join(".")}`}: ${issue.message}`)
    .join("; ")

// internal

const KNOWN = new Set(Object.keys(CloudEvent.fields))
const EXTENSION_NAME = /^[a-z0-9]{1,20}$/

// Extensions are checked by name above, then ignored.
const decodeCloudEvent = Schema.decodeUnknownEither(CloudEvent, { onExcessProperty: "ignore", errors: "all" })
const decodeNative = Schema.decodeUnknownEither(NativeEvent, { errors: "all" })

const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("utf8")
