/**
 * Inbound events over HTTP (§7.9, §8.2): CloudEvents 1.0 in structured mode
 * (`application/cloudevents+json`), binary mode (`ce-*` headers) or batched mode
 * (`application/cloudevents-batch+json`), or the native shape. Whatever the form, the event's
 * `source` is the authenticated caller, never what the body claims: a producer cannot speak for
 * another, nor reach another producer's dedup keys.
 *
 * **What is stored.** A CloudEvent's payload is the event itself in the CloudEvents JSON format
 * (an envelope), so the run that receives it reads `data` and every attribute the producer sent
 * (`time`, `datacontenttype`, `dataschema`, extensions), with no store change: `payload.data` (or
 * `payload.data_base64`) is the data, `payload.source` the producer's own (unverified) source.
 * The envelope is the same whichever mode carried the event:
 *
 * - Data is read as bytes plus a media type, then kept by the media type: JSON media
 *   (`application/json`, `*+json`) as the JSON value in `data`; text media (`text/*`, XML,
 *   `application/javascript`, form data) as a string in `data`; anything else as canonical
 *   base64 in `data_base64`. XML in binary mode, `data` text in structured mode and the same XML
 *   as `data_base64` are one envelope. `data_base64` that is not strict base64 is refused.
 * - `datacontenttype` is kept with data only (binary mode cannot tell a producer's value from the
 *   transport's default when there is no body), lowercased, without `charset=utf-8` (every text
 *   here is UTF-8; another charset is refused); absent with JSON `data` it is
 *   `application/json`, as the JSON format says to assume.
 * - Extension attributes (lowercase a-z and 0-9, 1 … 64 characters, in both modes) are kept in
 *   their canonical string form, which is what binary mode carries: `5` and `true` in structured
 *   mode are stored `"5"` and `"true"`. The spec's 20 characters is a SHOULD and the official
 *   SDK sends longer names, so 64 bounds what is kept without refusing them.
 *
 * **Correlation.** `subject` is the key `("subject", subject)`. Further keys travel in the
 * extension attribute `agentplanekeys`: JSON text of the native shape's `correlation` array,
 * `[{"namespace":"order","value":"ORD-1"}]` (in binary mode the `ce-agentplanekeys` header,
 * percent-encoded where it leaves printable ASCII). Both together are the event's keys.
 */
import { Either, ParseResult, Schema } from "effect"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import { DEDUP_SEPARATOR, InboundEvent } from "../domain/Event.js"
import * as Json from "../domain/Json.js"
import { MAX_KEY_VALUE_BYTES, MAX_NAME_BYTES } from "../domain/Limits.js"
import * as Text from "../domain/Text.js"
import type { Caller } from "./Caller.js"
import { AnyJson, BoundedName, KeysInput, NativeEvent } from "./Wire.js"

/** The media type of a structured-mode CloudEvent. */
export const STRUCTURED = "application/cloudevents+json"

/** The media type of a batch of structured-mode CloudEvents. */
export const BATCH = "application/cloudevents-batch+json"

/** The most events one batch may carry; each is delivered in turn within the request. */
export const MAX_BATCH = 100

/** The extension attribute carrying correlation keys beyond `subject`. */
export const KEYS_EXTENSION = "agentplanekeys"

/** Extension attribute names: lowercase letters and digits, 1 … 64 of them (see the module comment). */
export const EXTENSION_NAME = /^[a-z0-9]{1,64}$/

/** The source every event from `caller` carries; the actor is escaped so it cannot forge a separator. */
export const callerSource = (caller: Caller): string => `agentplane://caller/${encodeURIComponent(caller.actor)}`

/** The context attributes CloudEvents 1.0 defines, as agentplane checks them. */
export const Attributes = Schema.Struct({
  specversion: Schema.Literal("1.0"),
  // `source` and `id` together become the event id, so together they must fit `MAX_NAME_BYTES`
  // (checked in `toInbound`, which can name both).
  id: BoundedName(MAX_NAME_BYTES),
  source: BoundedName(MAX_NAME_BYTES),
  type: BoundedName(MAX_NAME_BYTES),
  subject: Schema.optional(BoundedName(MAX_KEY_VALUE_BYTES)),
  datacontenttype: Schema.optional(BoundedName(MAX_KEY_VALUE_BYTES)),
  dataschema: Schema.optional(
    BoundedName(MAX_KEY_VALUE_BYTES).pipe(
      Schema.filter((s) => URL.canParse(s) || "expected an absolute URI (RFC 3986)"),
    ),
  ),
  time: Schema.optional(
    Schema.String.pipe(
      Schema.filter((s) => (RFC3339.test(s) && Number.isFinite(Date.parse(s))) || "expected an RFC 3339 timestamp"),
    ),
  ),
})
export type Attributes = typeof Attributes.Type

/**
 * A structured-mode CloudEvent in the JSON Schema the OpenAPI document shows (as the component
 * `CloudEvent`); extension attributes are what `additionalProperties` admits.
 */
export const JSON_SCHEMA = {
  type: "object",
  description:
    "A CloudEvent 1.0 in the JSON format. `source` and `id` together are the dedup key under the caller's source; " +
    `\`type\` is the kind; \`subject\` is the correlation key (subject, <subject>) and the \`${KEYS_EXTENSION}\` extension ` +
    "(JSON text of [{namespace, value}]) adds more. Extension attributes are lowercase a-z0-9, 1 … 64 characters, " +
    "string, integer or boolean, kept as strings. The receiving run's payload is the whole event in this format.",
  required: ["specversion", "id", "source", "type"],
  properties: {
    specversion: { type: "string", enum: ["1.0"] },
    id: { type: "string", minLength: 1, maxLength: MAX_NAME_BYTES },
    source: { type: "string", minLength: 1, maxLength: MAX_NAME_BYTES },
    type: { type: "string", minLength: 1, maxLength: MAX_NAME_BYTES },
    subject: { type: "string", minLength: 1, maxLength: MAX_KEY_VALUE_BYTES },
    datacontenttype: { type: "string", minLength: 1 },
    dataschema: { type: "string", format: "uri" },
    time: { type: "string", format: "date-time" },
    [KEYS_EXTENSION]: {
      type: "string",
      description: 'JSON text of correlation keys, e.g. [{"namespace":"order","value":"ORD-1"}]',
    },
    data: { description: "the data: any JSON value (a string for text media types)" },
    data_base64: { type: "string", contentEncoding: "base64", description: "binary data, strict padded base64" },
  },
  additionalProperties: { type: ["string", "integer", "boolean"] },
} as const

/**
 * A structured-mode CloudEvent for the `Api`: the server reads the body itself, so this is the
 * document's and the derived client's; the document points it at `JSON_SCHEMA`.
 */
export const StructuredEvent = Schema.Record({ key: Schema.String, value: AnyJson }).annotations({
  identifier: "CloudEvent",
  jsonSchema: { $ref: "#/components/schemas/CloudEvent" },
})

/** A batched-mode body: structured-mode events in a JSON array. */
export const EventBatch = Schema.Array(StructuredEvent).annotations({
  identifier: "CloudEventBatch",
  jsonSchema: {
    type: "array",
    maxItems: MAX_BATCH,
    items: { $ref: "#/components/schemas/CloudEvent" },
    description: `CloudEvents in the JSON format, at most ${MAX_BATCH}; each gets its own answer, in order`,
  },
})

/** A structured-mode body. */
export const fromStructured = (body: Uint8Array, caller: Caller): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(yield* utf8(body, "body")), (e) => `body: ${e}`)
    if (!isObject(json)) {
      return yield* Either.left(`body: a structured CloudEvent is a JSON object (send a JSON array as ${BATCH})`)
    }
    return yield* fromStructuredJson(json, caller, "")
  })

/**
 * A batched-mode body: every event is checked before any is delivered, so a refusal names each
 * bad event by its place (`[2].type: …`) and delivers none.
 */
export const fromBatch = (body: Uint8Array, caller: Caller): Either.Either<ReadonlyArray<InboundEvent>, string> =>
  Either.gen(function* () {
    const json = yield* Either.mapLeft(Json.parse(yield* utf8(body, "body")), (e) => `body: ${e}`)
    if (!Array.isArray(json)) return yield* Either.left(`body: a ${BATCH} body is a JSON array of CloudEvents`)
    if (json.length > MAX_BATCH) {
      return yield* Either.left(`body: ${json.length} events in one batch, over the limit of ${MAX_BATCH}; split it`)
    }
    const events: Array<InboundEvent> = []
    const problems: Array<string> = []
    json.forEach((item, i) => {
      const one = isObject(item)
        ? fromStructuredJson(item, caller, `[${i}].`)
        : Either.left(`[${i}]: a CloudEvent is a JSON object`)
      Either.match(one, { onLeft: (e) => problems.push(e), onRight: (e) => events.push(e) })
    })
    return problems.length === 0 ? events : yield* Either.left(problems.join("; "))
  })

/** A binary-mode request: attributes in `ce-*` headers, the body is the data as its content type says. */
export const fromBinary = (
  headers: Readonly<Record<string, string | undefined>>,
  body: Uint8Array,
  caller: Caller,
): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const attributes: Record<string, string> = {}
    for (const [name, value] of Object.entries(headers)) {
      if (!name.startsWith("ce-") || value === undefined) continue
      const key = name.slice(3)
      if (key === "data" || key === "data_base64") return yield* Either.left(`${name}: is not a header attribute`)
      if (!KNOWN.has(key) && !EXTENSION_NAME.test(key)) return yield* Either.left(badName(name))
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
    // In binary mode the Content-Type is the datacontenttype (binding §3.1.1).
    const contentType = headers["content-type"]
    if (contentType !== undefined) attributes.datacontenttype = contentType
    const data: Carried = body.length === 0 ? { _tag: "None" } : { _tag: "Bytes", bytes: body }
    return yield* toInbound(attributes, data, caller, "ce-")
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

/** The data as it arrived: none, a JSON value (structured `data`), or bytes (a binary body, `data_base64`). */
type Carried =
  | { readonly _tag: "None" }
  | { readonly _tag: "Json"; readonly value: Json.Json }
  | { readonly _tag: "Bytes"; readonly bytes: Uint8Array }

const KNOWN = new Set([...Object.keys(Attributes.fields), "data", "data_base64"])

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/** Strict base64 (RFC 4648 §4, padded): what `Buffer.from(…, "base64")` would silently skip over is refused. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

const badName = (name: string) =>
  `${name}: is not a CloudEvents attribute name (lowercase a-z and 0-9, 1 … 64 characters)`

const isObject = (json: Json.Json): json is { readonly [key: string]: Json.Json } =>
  typeof json === "object" && json !== null && !Array.isArray(json)

const fromStructuredJson = (
  json: { readonly [key: string]: Json.Json },
  caller: Caller,
  prefix: string,
): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const attributes: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(json)) {
      if (key === "data" || key === "data_base64") continue
      if (!KNOWN.has(key) && !EXTENSION_NAME.test(key)) return yield* Either.left(badName(`${prefix}${key}`))
      // Extensions are kept in their canonical string form, as binary mode carries them.
      if (!KNOWN.has(key)) {
        if (typeof value === "boolean" || (typeof value === "number" && Number.isInteger(value))) {
          attributes[key] = String(value)
          continue
        }
        if (typeof value !== "string") {
          return yield* Either.left(`${prefix}${key}: an extension attribute is a string, an integer or a boolean`)
        }
      }
      attributes[key] = value
    }
    if ("data" in json && "data_base64" in json) {
      return yield* Either.left(`${prefix}data_base64: an event carries data or data_base64, not both`)
    }
    let data: Carried = { _tag: "None" }
    if (json.data !== undefined) data = { _tag: "Json", value: json.data }
    const base64 = json.data_base64
    if (base64 !== undefined) {
      if (typeof base64 !== "string" || !BASE64.test(base64)) {
        return yield* Either.left(`${prefix}data_base64: is not base64 (RFC 4648, A-Z a-z 0-9 + /, padded with =)`)
      }
      data = { _tag: "Bytes", bytes: Buffer.from(base64, "base64") }
    }
    return yield* toInbound(attributes, data, caller, prefix)
  })

/**
 * The attributes and data as the caller's event: `id` joins the producer's source and id with
 * U+001F, `kind` is `type`, the keys are `subject` and `agentplanekeys`, and the payload is the
 * envelope (module comment). `Left` names the attribute at fault, under `prefix`.
 */
const toInbound = (
  raw: Record<string, unknown>,
  carried: Carried,
  caller: Caller,
  prefix: string,
): Either.Either<InboundEvent, string> =>
  Either.gen(function* () {
    const ce = yield* Either.mapLeft(decodeAttributes(raw), (e) => describe(e, prefix))
    const id = `${ce.source}${DEDUP_SEPARATOR}${ce.id}`
    const over = Text.overLimit(id, MAX_NAME_BYTES)
    if (over !== undefined) {
      return yield* Either.left(
        `${prefix}source, ${prefix}id: the event id is source, U+001F, id; together it ${over}; shorten either`,
      )
    }
    const extensions: Record<string, string> = {}
    for (const key of Object.keys(raw).sort()) {
      if (KNOWN.has(key)) continue
      const value = raw[key] as string
      extensions[key] = yield* Either.mapLeft(decodeExtension(value), (e) =>
        ParseResult.ArrayFormatter.formatErrorSync(e)
          .map((issue) => `${prefix}${key}: ${issue.message}`)
          .join("; "),
      )
    }
    const keys = yield* keysOf(ce, extensions[KEYS_EXTENSION], prefix)
    const media = yield* mediaOf(ce.datacontenttype, carried, prefix)
    const data = yield* dataOf(carried, media, prefix)
    const envelope: Record<string, Json.Json> = {
      specversion: ce.specversion,
      id: ce.id,
      source: ce.source,
      type: ce.type,
      ...(ce.subject === undefined ? {} : { subject: ce.subject }),
      ...(ce.time === undefined ? {} : { time: ce.time }),
      ...(ce.dataschema === undefined ? {} : { dataschema: ce.dataschema }),
      ...(media === undefined || data === undefined ? {} : { datacontenttype: media }),
      ...extensions,
      ...(data ?? {}),
    }
    return yield* inboundOrMessage({
      source: callerSource(caller),
      id,
      kind: ce.type,
      correlation: CorrelationKey.dedupe(keys),
      payload: envelope,
    })
  })

/** `("subject", subject)` and the keys of `agentplanekeys`, in that order. */
const keysOf = (
  ce: Attributes,
  extension: string | undefined,
  prefix: string,
): Either.Either<ReadonlyArray<CorrelationKey.CorrelationKey>, string> =>
  Either.gen(function* () {
    const subject = ce.subject === undefined ? [] : [CorrelationKey.make("subject", ce.subject)]
    if (extension === undefined) return subject
    const where = `${prefix}${KEYS_EXTENSION}`
    const json = yield* Either.mapLeft(Json.parse(extension), (e) => `${where}: ${e}`)
    const keys = yield* Either.mapLeft(decodeKeys(json), (e) => describe(e, where))
    return [...subject, ...keys.map((k) => CorrelationKey.make(k.namespace, k.value))]
  })

/**
 * The media type to keep: lowercased, `charset=utf-8` dropped, other parameters kept; absent with
 * JSON data, `application/json`. `undefined` when the data has none to go by (base64 bytes).
 */
const mediaOf = (
  declared: string | undefined,
  carried: Carried,
  prefix: string,
): Either.Either<string | undefined, string> => {
  if (declared === undefined) return Either.right(carried._tag === "Bytes" ? undefined : "application/json")
  const [type, ...parameters] = declared.split(";").map((part) => part.trim())
  const kept: Array<string> = []
  for (const parameter of parameters) {
    const [name = "", ...rest] = parameter.split("=")
    const value = rest
      .join("=")
      .trim()
      .replace(/^"(.*)"$/, "$1")
    if (name.trim().toLowerCase() === "charset") {
      if (UTF8_LABELS.has(value.toLowerCase())) continue
      return Either.left(`${prefix}datacontenttype: charset ${JSON.stringify(value)} is not accepted; send UTF-8`)
    }
    kept.push(`${name.trim().toLowerCase()}=${value}`)
  }
  return Either.right([type?.toLowerCase() ?? "", ...kept].join("; "))
}

const UTF8_LABELS = new Set(["utf-8", "utf8", "unicode-1-1-utf-8"])

/** The data's place in the envelope, by media type (module comment); `undefined` for none. */
const dataOf = (
  carried: Carried,
  media: string | undefined,
  prefix: string,
): Either.Either<{ readonly data: Json.Json } | { readonly data_base64: string } | undefined, string> => {
  if (carried._tag === "None") return Either.right(undefined)
  if (carried._tag === "Json") return Either.right({ data: carried.value })
  const essence = media?.split(";")[0] ?? ""
  // In binary mode the body is the data.
  const where = prefix === "ce-" ? "data" : `${prefix}data_base64`
  if (isJsonMedia(essence)) {
    return Either.flatMap(utf8(carried.bytes, where), (text) =>
      Either.mapBoth(Json.parse(text), { onLeft: (e) => `${where}: ${e}`, onRight: (data) => ({ data }) }),
    )
  }
  if (isTextMedia(essence)) return Either.map(utf8(carried.bytes, where), (data) => ({ data }))
  return Either.right({ data_base64: Buffer.from(carried.bytes).toString("base64") })
}

const isJsonMedia = (essence: string): boolean => essence === "application/json" || essence.endsWith("+json")

const isTextMedia = (essence: string): boolean =>
  essence.startsWith("text/") ||
  essence === "application/xml" ||
  essence.endsWith("+xml") ||
  essence === "application/javascript" ||
  essence === "application/x-www-form-urlencoded"

const decodeAttributes = Schema.decodeUnknownEither(Attributes, { onExcessProperty: "ignore", errors: "all" })
const decodeExtension = Schema.decodeUnknownEither(BoundedName(MAX_KEY_VALUE_BYTES))
const decodeKeys = Schema.decodeUnknownEither(KeysInput, { errors: "all" })
const decodeNative = Schema.decodeUnknownEither(NativeEvent, { errors: "all" })

/** The bytes as UTF-8, fatally: replacing invalid bytes with U+FFFD merged different ids. */
const utf8 = (bytes: Uint8Array, what: string): Either.Either<string, string> =>
  Either.mapLeft(Text.decodeUtf8(bytes), (e) => `${what}: ${e}`)

/**
 * The event through the domain schema rather than its constructor, so what the domain refuses
 * (the caller's source over its limit, say) is a message, not a defect.
 */
const inbound = Schema.decodeUnknownEither(InboundEvent, { errors: "all" })
const inboundOrMessage = (fields: unknown): Either.Either<InboundEvent, string> =>
  Either.mapLeft(inbound(fields), (e) => describe(e))
