/**
 * Bearer authentication (§8.1): every endpoint of the API carries this middleware, which turns the
 * credential into the request's `CurrentCaller` or answers 401.
 */
import { HttpApiMiddleware, HttpApiSchema, HttpApiSecurity } from "@effect/platform"
import { Schema } from "effect"
import { CurrentCaller } from "./Caller.js"

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
