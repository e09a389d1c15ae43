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
import { MAX_KEY_VALUE_BYTES, MAX_NAME_BYTES } from "../domain/Limits.js"
import * as Text from "../domain/Text.js"
import type { Caller } from "./Caller.js"
import { AnyJson, BoundedName, NativeEvent } from "./Wire.js"

/** The media type of a structured-mode CloudEvent. */
export const STRUCTURED = "application/cloudevents+json"

/** The source every event from `caller` carries; the actor is escaped so it cannot forge a separator. */
export const callerSource = (caller: Caller): string => `agentplane://caller/${encodeURIComponent(caller.actor)}`

/** The attributes agentplane reads; the others CloudEvents 1.0 defines are accepted and ignored. */
export const CloudEvent = Schema.Struct({
  specversion: Schema.Literal("1.0"),
  // `source` and `id` together become the event id, so together they must fit `MAX_NAME_BYTES`
  // (checked in `toInbound`, which can name both).
  id: BoundedName(MAX_NAME_BYTES),
  source: BoundedName(MAX_NAME_BYTES),
  type: BoundedName(MAX_NAME_BYTES),
  subject: Schema.optional(BoundedName(MAX_KEY_VALUE_BYTES)),
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
 * `("subject", subject)`. `Left` when the joined id is over `MAX_NAME_BYTES`.
 */
export const toInbound = (ce: CloudEvent, caller: Caller, prefix = ""): Either.Either<InboundEvent, string> => {
  const id = `${ce.source}${DEDUP_SEPARATOR}${ce.id}`
  const over = Text.overLimit(id, MAX_NAME_BYTES)
  if (over !== undefined) {
    return Either.left(
      `${prefix}source, ${prefix}id: the event id is source, U+001F, id; together it ${over}; shorten either`,
    )
  }
  return inboundOrMessage({
    source: callerSource(caller),
    id,
    kind: ce.type,
    correlation: ce.subject === undefined ? [] : [{ namespace: "subject", value: ce.subject }],
    // Binary data has no JSON form; it travels as its base64 text.
    payload: ce.data ?? ce.data_base64 ?? null,
  })
}

/** A structured-mode body. */
export const fromStructured = (body: Uint8Array, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(yield* utf8(body, "body")), (e) => `body: ${e}`)
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
    const ce = yield* Either.mapLeft(decodeCloudEvent(json), (e) => describe(e))
    return yield* toInbound(ce, caller)
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
      // Node reads header bytes as ISO-8859-1, so raw UTF-8 would arrive as mojibake: the binding
      // says to percent-encode anything outside printable ASCII, and only that is accepted.
      if (!PRINTABLE_ASCII.test(value)) {
        return yield* Either.left(`${name}: characters outside printable ASCII must be percent-encoded (UTF-8)`)
      }
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
        attributes.data = yield* Either.mapLeft(Json.parse(yield* utf8(body, "data")), (e) => `data: ${e}`)
      } else if (media.startsWith("text/")) {
        attributes.data = yield* utf8(body, "data")
      } else {
        attributes.data_base64 = Buffer.from(body).toString("base64")
      }
    }
    const ce = yield* Either.mapLeft(decodeCloudEvent(attributes), (e) => describe(e, "ce-"))
    return yield* toInbound(ce, caller, "ce-")
  })

/** The native shape `{id, kind, correlation, payload}`; unknown fields are refused. */
export const fromNative = (body: Uint8Array, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(yield* utf8(body, "body")), (e) => `body: ${e}`)
    const native = yield* Either.mapLeft(decodeNative(json), (e) => describe(e))
    return yield* nativeToInbound(native, caller)
  })

/** The native shape, already decoded, as the caller's event; `Left` names what the domain refused. */
export const nativeToInbound = (native: typeof NativeEvent.Type, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.map(
    inboundOrMessage({
      source: callerSource(caller),
      id: native.id,
      kind: native.kind,
      correlation: native.correlation,
      payload: native.payload,
    }),
    (event) => new InboundEvent({ ...event, correlation: CorrelationKey.dedupe(event.correlation) }),
  )

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

/** The bytes as UTF-8, fatally: replacing invalid bytes with U+FFFD merged different ids. */
const utf8 = (bytes: Uint8Array, what: string): Either.Either<string, string> =>
  Either.mapLeft(Text.decodeUtf8(bytes), (e) => `${what}: ${e}`)

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/**
 * The event through the domain schema rather than its constructor, so what the domain refuses
 * (the caller's source over its limit, say) is a message, not a defect.
 */
const inbound = Schema.decodeUnknownEither(InboundEvent, { errors: "all" })
const inboundOrMessage = (fields: unknown): Either.Either<InboundEvent, string> =>
  Either.mapLeft(inbound(fields), (e) => describe(e))
