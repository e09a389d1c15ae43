/**
 * Request bodies, read strictly and the same way on every route (§8.2). The platform decodes any
 * body as UTF-8 whatever charset it declares and replaces invalid bytes with U+FFFD, so
 * `cust-M\xfcller` and `cust-M\xf6ller` sent as ISO-8859-1 were one id; and it reads JSON with
 * `JSON.parse`, where a duplicated key silently wins over the first. Here a declared charset other
 * than UTF-8 is 415, bytes that are not UTF-8 are 422, and JSON text goes through
 * `JsonText.parse` (duplicate keys, lone surrogates and nesting past `MAX_JSON_DEPTH` are 422).
 */
import type { IncomingMessage } from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Either } from "effect"
import type { Json } from "../domain/Json.js"
import * as JsonText from "../domain/JsonText.js"
import * as Text from "../domain/Text.js"
import { InvalidRequest, MAX_BODY_BYTES, PayloadTooLarge, UnsupportedMediaType } from "./Api.js"

/** Charset labels that name UTF-8 (WHATWG Encoding lists these three). */
const UTF8_LABELS = new Set(["utf-8", "utf8", "unicode-1-1-utf-8"])

/**
 * The 415 for a `Content-Type` that declares a charset other than UTF-8, or `undefined`. Every
 * body agentplane reads as text is UTF-8; decoding another charset as UTF-8 would merge ids.
 */
export const charsetRefusal = (contentType: string | undefined): UnsupportedMediaType | undefined => {
  if (contentType === undefined) return undefined
  for (const parameter of contentType.split(";").slice(1)) {
    const [name, ...rest] = parameter.split("=")
    if (name?.trim().toLowerCase() !== "charset") continue
    const label = rest
      .join("=")
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase()
    if (!UTF8_LABELS.has(label)) {
      return new UnsupportedMediaType({
        message: `content-type: charset ${JSON.stringify(label)} is not accepted; send UTF-8 (charset=utf-8 or none)`,
      })
    }
  }
  return undefined
}

/** The body as text: its charset (if declared) is UTF-8 and its bytes are UTF-8, or the refusal. */
export const text = (
  bytes: Uint8Array,
  contentType: string | undefined,
  what = "body",
): Either.Either<string, UnsupportedMediaType | InvalidRequest> => {
  const refused = charsetRefusal(contentType)
  if (refused !== undefined) return Either.left(refused)
  return Either.mapLeft(Text.decodeUtf8(bytes), (e) => new InvalidRequest({ message: `${what}: ${e}` }))
}

/** The body as strict JSON (`JsonText.parse`); an empty body is `null`, as the platform reads it. */
export const json = (
  bytes: Uint8Array,
  contentType: string | undefined,
  what = "body",
): Either.Either<Json, UnsupportedMediaType | InvalidRequest> =>
  Either.flatMap(text(bytes, contentType, what), (s) =>
    s === ""
      ? Either.right(null)
      : Either.mapLeft(JsonText.parse(s), (e) => new InvalidRequest({ message: `${what}: not JSON: ${e}` })),
  )

/**
 * The 415 for a body in a media type other than JSON on a route that reads JSON, or `undefined`.
 * Without it a form or a multipart body reached the platform's own decoders (a 500) or the
 * schema (a 422 about the body's shape, when the shape was never the problem).
 *
 * Decision (a body with no `Content-Type`, or an empty one): 415 as well, naming
 * application/json. HTTP lets a receiver take an undeclared body as `application/octet-stream`
 * (RFC 9110 §8.3), which is not JSON; reading it as JSON anyway would answer a client that
 * forgot the header (a raw byte upload, `fetch` with an ArrayBuffer) with a 422 about the body's
 * shape, when the shape was never the problem. A request with no body (`hasBody` false: no
 * `Content-Length` above 0 and no `Transfer-Encoding`) needs no type: routes whose body is
 * optional take it bare.
 */
export const mediaTypeRefusal = (
  contentType: string | undefined,
  hasBody: boolean,
): UnsupportedMediaType | undefined => {
  const type = (contentType?.split(";")[0] ?? "").trim().toLowerCase()
  if (type === "") {
    return hasBody
      ? new UnsupportedMediaType({
          message: "the body declares no content-type; send it as application/json",
        })
      : undefined
  }
  return JSON_TYPES.has(type)
    ? undefined
    : new UnsupportedMediaType({
        message: `content-type ${JSON.stringify(type)} is not read here; send the body as application/json`,
      })
}

/** Whether `incoming` carries a body: a `Content-Length` above 0, or any `Transfer-Encoding` (chunked). */
export const hasBody = (incoming: IncomingMessage): boolean =>
  incoming.headers["transfer-encoding"] !== undefined || Number(incoming.headers["content-length"] ?? "0") > 0

/**
 * `request` with its body read strictly: at most `MAX_BODY_BYTES`, in JSON when `jsonOnly` (any
 * other read of a body in another media type is its 415), `text` and `json` as above. Reading
 * stays lazy, so a route still authenticates before it looks at the body. A refusal is raised as a defect because the platform reads a payload
 * with `orDie`; `Server.refusals` turns it back into the tagged error. The wrapper delegates by
 * prototype, so the platform's getters keep reading the underlying Node request.
 */
export const strict = (
  request: HttpServerRequest.HttpServerRequest,
  incoming: IncomingMessage,
  options: { readonly jsonOnly: boolean },
): HttpServerRequest.HttpServerRequest => {
  const contentType = request.headers["content-type"]
  const refused = options.jsonOnly ? mediaTypeRefusal(contentType, hasBody(incoming)) : undefined
  const bytes =
    refused === undefined ? Effect.runSync(Effect.cached(readCapped(incoming, MAX_BODY_BYTES))) : Effect.die(refused)
  const read = <A>(decode: (bytes: Uint8Array) => Either.Either<A, UnsupportedMediaType | InvalidRequest>) =>
    Effect.flatMap(bytes, (b) => Either.match(decode(b), { onLeft: Effect.die, onRight: Effect.succeed }))
  // The platform reads a form or a multipart body through its own decoders, never `json`.
  const others = refused === undefined ? [] : ["multipart", "multipartStream", "urlParamsBody", "stream"]
  return Object.create(request, {
    ...Object.fromEntries(others.map((name) => [name, { get: () => Effect.die(refused) }])),
    arrayBuffer: {
      get: () => Effect.map(bytes, (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer),
    },
    text: { get: () => read((b) => text(b, contentType)) },
    json: { get: () => read((b) => json(b, contentType)) },
  }) as HttpServerRequest.HttpServerRequest
}

/** A defect that `strict` raised for a refused body, as the tagged error to answer with. */
export const isRefusal = (u: unknown): u is UnsupportedMediaType | InvalidRequest | PayloadTooLarge =>
  u instanceof UnsupportedMediaType || u instanceof InvalidRequest || u instanceof PayloadTooLarge

// internal

const JSON_TYPES = new Set(["application/json"])

/**
 * The whole body, or `PayloadTooLarge` (as a defect, like every refusal) once it passes `limit`.
 * A body with no declared length (chunked) is only found too long while it arrives. The
 * platform's own limit destroys the socket there and the client sees a reset; here the rest is
 * read and dropped, so the connection stays whole and the client reads its 413.
 */
const readCapped = (incoming: IncomingMessage, limit: number): Effect.Effect<Uint8Array> =>
  Effect.async<Uint8Array>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size <= limit) {
        chunks.push(chunk)
        return
      }
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onError)
      // Drained, not destroyed: a destroyed request resets the connection before the 413 is read.
      incoming.on("data", () => {})
      resume(Effect.die(new PayloadTooLarge({ limit, message: `the body exceeds ${limit} bytes` })))
    }
    const onEnd = () => resume(Effect.succeed(new Uint8Array(Buffer.concat(chunks))))
    const onError = (e: Error) => resume(Effect.die(e))
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onError)
    if (incoming.readableEnded) onEnd()
  })
