/**
 * The identity of the Cedar bundle the routes are decided by, as `GET /policy` shows it: so an
 * operator (or a deployment check) can tell which policy a running server holds, and compare it
 * with `agentplane policy validate` of the bundle on disk or with a run's `policy_bundle`.
 *
 * It shows the bundle's digest (`policy/Bundle.ts` states the rule, `digestRule` its version),
 * the version of agentplane's schema it was validated against, its policy file names and each
 * policy's id and effect. Never the policy text or where the bundle lies on the server's disk:
 * the route is any tenant's a policy permits, and the text may name other tenants' cases.
 */
import { Context, Schema } from "effect"
import { Digest } from "../domain/Digest.js"
import * as AgentplaneSchema from "../policy/AgentplaneSchema.js"
import * as Bundle from "../policy/Bundle.js"

export const PolicyInfo = Schema.Struct({ id: Schema.String, effect: Schema.Literal("permit", "forbid") })

export const Identity = Schema.Struct({
  digest: Digest,
  digestRule: Schema.Int,
  schemaVersion: Schema.Int,
  files: Schema.Array(Schema.String),
  policies: Schema.Array(PolicyInfo),
}).annotations({ identifier: "PolicyBundle" })
export type Identity = typeof Identity.Type

/** The identity of the bundle this server's authoriser decides by; built from the same load as the authoriser. */
export class RouteBundle extends Context.Tag("agentplane/http/RouteBundle")<RouteBundle, Identity>() {}

/** The identity of `bundle`, whose policies (in bundle order) are `policies`. */
export const identity = (
  bundle: Bundle.Bundle,
  policies: Iterable<{ readonly id: string; readonly effect: "permit" | "forbid" }>,
): Identity => ({
  digest: bundle.digest,
  digestRule: Bundle.DIGEST_RULE,
  schemaVersion: AgentplaneSchema.VERSION,
  files: bundle.policies.map((file) => file.name),
  policies: Array.from(policies, ({ id, effect }) => ({ id, effect })),
})
