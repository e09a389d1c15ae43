/**
 * `GET /policy`: the identity of the bundle the routes are decided by (`RouteBundle`), for
 * whoever the policy lets take `api:policy.read`.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { RouteBundle } from "../RouteBundle.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "policy", (handlers) =>
  Effect.map(RouteBundle, (bundle) =>
    handlers.handle("read", () => Effect.as(Guard.authorize("api:policy.read"), bundle)),
  ),
)
