/**
 * What the OpenAPI document says beyond what the `Api`'s schemas give it (`OpenApi.Transform`
 * functions, applied once when the document is built). Each rewrite makes the document say what
 * the server does, where the generator cannot know it:
 *
 * - The platform lists its own 400 (`HttpApiDecodeError`) on every operation, but the server
 *   never sends it: `Server.refusals` answers every failed decode as 422 `InvalidRequest`. Its
 *   only 400, on every route, is a request with two Authorization headers.
 * - A status several errors share is described once, by what it means here, instead of by the
 *   name of whichever error the generator met first.
 * - Binary-mode CloudEvents have no schema: their body is the data in any media type, and the
 *   attributes are `ce-*` headers.
 * - The webhook handshake answers with headers, which the generator cannot declare.
 */
import * as CloudEvents from "./CloudEvents.js"

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON, rewritten in place.
type Spec = Record<string, any>

const BODY_METHODS = new Set(["post", "put", "patch", "delete"])

/** What each status means on this API. */
const STATUS: Readonly<Record<string, string>> = {
  "401": "No credential, or one the credential table does not know (`Unauthorized`)",
  "403":
    "The policy does not allow the caller this action (`Forbidden`), or the four-eyes rule bars the caller (`Excluded`, `WrongRole`)",
  "404": "No such task, case or run in the caller's tenant",
  "409": "The task is no longer pending, or someone else holds it, or the caller does not",
  "413": "The body is over 1 MiB (`PayloadTooLarge`); nothing of it was read into a store",
  "415": "The body's media type or charset is not one this route reads (`UnsupportedMediaType`)",
  "422": "The request failed validation (`InvalidRequest`); `message` names each offending field",
  "429": "The tenant's quota refuses another run (`AdmissionRefused`)",
  "500": "The authoriser could not evaluate (`AuthorizerUnavailable`) or stored data is damaged (`Corrupt`)",
  "503": "A store is unavailable (`Unavailable`, with its reason): retry later",
}

/**
 * The whole document: drop the 400 nobody sends, list each body refusal only where it can
 * happen, describe each status by its meaning.
 */
export const document = (spec: Spec): Spec => {
  for (const item of Object.values<Spec>(spec.paths ?? {})) {
    for (const [method, operation] of Object.entries<Spec>(item)) {
      const responses: Spec = operation.responses ?? {}
      delete responses["400"]
      // `Server.refusals` answers a request with two Authorization headers before any route.
      responses["400"] = {
        description: "The request carries more than one Authorization header (`AmbiguousCredential`)",
      }
      const hasInput = (operation.parameters ?? []).length > 0 || operation.requestBody !== undefined
      // `Server.refusals` refuses a declared length over the limit on a method that carries a
      // body, reads a body only where the route has one, and validates what there is.
      if (!BODY_METHODS.has(method)) delete responses["413"]
      if (operation.requestBody === undefined) delete responses["415"]
      if (!hasInput) delete responses["422"]
      for (const [status, response] of Object.entries<Spec>(responses)) {
        const meaning = STATUS[status]
        if (meaning !== undefined) response.description = meaning
      }
    }
  }
  spec.components.schemas.CloudEvent = CloudEvents.JSON_SCHEMA
  delete spec.components.schemas.HttpApiDecodeError
  pruneUnused(spec.components.schemas, spec)
  return spec
}

/** Drops the components nothing refers to any more (the platform's decode error brought its own). */
const pruneUnused = (schemas: Spec, spec: Spec): void => {
  for (;;) {
    const text = JSON.stringify({ ...spec, components: { ...spec.components, schemas: {} } })
    const referred = (name: string) =>
      text.includes(`"#/components/schemas/${name}"`) ||
      Object.entries(schemas).some(
        ([other, schema]) => other !== name && JSON.stringify(schema).includes(`"#/components/schemas/${name}"`),
      )
    const unused = Object.keys(schemas).filter((name) => !referred(name))
    if (unused.length === 0) return
    for (const name of unused) delete schemas[name]
  }
}

/** `POST /events`: binary mode, whose body is the data in any media type and whose attributes are headers. */
export const binaryMode = (operation: Spec): Spec => {
  operation.requestBody.content["*/*"] = {
    schema: {
      description:
        "Binary mode: the event's data, in the media type its Content-Type (the datacontenttype) names; " +
        "the attributes are the ce-* headers, and ce-specversion marks the request as binary mode.",
    },
  }
  operation.requestBody.description =
    "A native event (application/json), a CloudEvent in structured mode (application/cloudevents+json), " +
    "a batch of them (application/cloudevents-batch+json: one answer per event, in order), or binary mode " +
    "(ce-* headers, any body). A CloudEvent is kept whole as the payload the receiving run reads."
  const header = (name: string, description: string) => ({
    name,
    in: "header",
    required: false,
    description: `Binary mode: ${description}`,
    schema: { type: "string" },
  })
  operation.parameters.push(
    header("ce-specversion", "1.0; marks the request as binary mode"),
    header("ce-id", "the producer's event id (with ce-source, the dedup key)"),
    header("ce-source", "the producer's source (the event is stored under the caller's)"),
    header("ce-type", "the event kind"),
    header("ce-subject", "the correlation key (subject, <value>)"),
    header("ce-time", "RFC 3339"),
    header("ce-dataschema", "an absolute URI"),
    header(`ce-${CloudEvents.KEYS_EXTENSION}`, 'more correlation keys: JSON text, [{"namespace":"…","value":"…"}]'),
  )
  return operation
}

/** `OPTIONS /events`: the CloudEvents webhook validation answer is in its headers. */
export const handshake = (operation: Spec): Spec => {
  const ok = operation.responses["200"]
  ok.description = "The caller may deliver to this endpoint, from the origin it asked for, at any rate"
  ok.headers = {
    "WebHook-Allowed-Origin": { description: "the origin the request named", schema: { type: "string" } },
    "WebHook-Allowed-Rate": { description: "`*`: no rate limit is imposed", schema: { type: "string" } },
    Allow: { description: "the methods of /events", schema: { type: "string" } },
  }
  return operation
}
