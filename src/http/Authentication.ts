/**
 * Bearer authentication (§8.1): every endpoint of the API carries this middleware, which turns the
 * credential into the request's `CurrentCaller` (recorded for the request log too) or answers 401,
 * which the request log sends with `WWW-Authenticate: Bearer`.
 */
import { HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import { CurrentCaller } from "./Caller.js"
import { Credentials } from "./Credentials.js"
import * as SeenCaller from "./SeenCaller.js"

/** No credential, or one the credential table does not know. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401 }),
) {}

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("agentplane/http/Authentication", {
  failure: Unauthorized,
  provides: CurrentCaller,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

/**
 * The live middleware: the bearer token, looked up in the credential table, is the caller.
 * Neither refusal echoes the token, so a 401 never repeats a secret into a log or a proxy.
 */
export const layer: Layer.Layer<Authentication, never, Credentials> = Layer.effect(
  Authentication,
  Effect.map(Credentials, (credentials) =>
    Authentication.of({
      bearer: (token) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          // The platform cuts seven characters off any Authorization header; only the Bearer
          // scheme (case-insensitive, RFC 9110 §11.1) counts as presenting a token.
          const header = request.headers.authorization ?? ""
          if (!BEARER.test(header) || Redacted.value(token).trim().length === 0) {
            return yield* new Unauthorized({ message: "missing credential: send Authorization: Bearer <token>" })
          }
          const caller = yield* credentials.lookup(token)
          if (Option.isNone(caller)) return yield* new Unauthorized({ message: "unknown credential" })
          yield* SeenCaller.seen(caller.value)
          return caller.value
        }),
    }),
  ),
)

// internal

const BEARER = /^bearer /i
