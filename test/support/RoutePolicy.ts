/**
 * The route policy every HTTP test server runs, as the Cedar bundle `serve` takes, and the JSON
 * allow list the suite ran under before (§8.1's older form), kept as the reference: the
 * equivalence test (`test/http/RoutePolicy.test.ts`) holds the bundle to the list's answers for
 * every route and caller, so "the suite passes on the bundle" means the same answers as before.
 *
 * Reviewers work the worklist, cases, runs and the operator reads; producers deliver; admins halt
 * and read the policy.
 */
import { Either, Layer } from "effect"
import type { Authorizer } from "../../src/http/Authorizer.js"
import * as CedarAuthorizer from "../../src/http/CedarAuthorizer.js"
import type * as JsonPolicy from "../../src/http/JsonPolicy.js"
import * as RouteBundle from "../../src/http/RouteBundle.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../../src/policy/Bundle.js"
import { PolicyEngine } from "../../src/services/PolicyEngine.js"

/** The JSON allow list the suite ran under before the bundle, the reference. */
export const json: JsonPolicy.File = {
  allow: [
    { action: "api:task.*", roles: ["reviewer"] },
    { action: "api:case.*", roles: ["reviewer"] },
    { action: "api:obligation.list", roles: ["reviewer"] },
    { action: "api:deadletter.list", roles: ["reviewer"] },
    { action: "api:census.read", roles: ["reviewer"] },
    { action: "api:event.deliver", roles: ["producer"] },
    { action: "api:admin.halt", roles: ["admin"] },
    { action: "api:run.*", roles: ["reviewer"] },
    { action: "api:log.read", roles: ["reviewer"] },
    // GET /policy came with the bundle: no answer before it, so the list names who may read it too.
    { action: "api:policy.read", roles: ["admin"] },
  ],
}

/**
 * The bundle's text, written as an operator would rather than translated: a reviewer may take
 * every route action but delivering and halting, so a route added to the API reaches reviewers
 * unless someone decides otherwise (and the equivalence test says so).
 */
export const cedar = `
@id("reviewers: everything but delivery, the emergency stop and the policy")
permit (principal in Agentplane::Role::"reviewer", action in Agentplane::Action::"api", resource)
unless {
  action in [
    Agentplane::Action::"api:event.deliver",
    Agentplane::Action::"api:admin.halt",
    Agentplane::Action::"api:policy.read"
  ]
};

@id("producers deliver events")
permit (principal in Agentplane::Role::"producer", action == Agentplane::Action::"api:event.deliver", resource);

@id("admins halt and read the policy")
permit (
  principal in Agentplane::Role::"admin",
  action in [Agentplane::Action::"api:admin.halt", Agentplane::Action::"api:policy.read"],
  resource
);
`

export const bundle: Bundle.Bundle = Bundle.make("test/support/RoutePolicy.ts", [{ name: "routes.cedar", text: cedar }])

/** `bundle` loaded; a bundle that does not validate fails every test that imports this module, saying why. */
const loaded = Either.getOrThrow(PolicyEngineCedar.load(bundle))

/** What `GET /policy` shows for `bundle`. */
export const identity: RouteBundle.Identity = RouteBundle.identity(bundle, loaded.policies.values())

/** The routes' authoriser over `bundle`, as `serve --policy` builds it. */
export const authorizer: Layer.Layer<Authorizer> = CedarAuthorizer.layer.pipe(
  Layer.provide(Layer.succeed(PolicyEngine, PolicyEngineCedar.engine(loaded))),
)

/** The authoriser and the identity `GET /policy` shows, from the one load, as `serve` provides them. */
export const layer: Layer.Layer<Authorizer | RouteBundle.RouteBundle> = Layer.merge(
  authorizer,
  Layer.succeed(RouteBundle.RouteBundle, identity),
)
