/**
 * The routes' authoriser over the `PolicyEngine` (§7.12: "the HTTP routes are decided by the same
 * bundle"), so an operator writes one Cedar policy for what runs may do and for who may call
 * which route.
 *
 * A request becomes: principal the caller's actor (its capability, its governing identity and
 * the actor that asked are all the caller), with its roles; action the route's `api:*`; resource
 * the case or run the route names (`case_…`, `run_…`), else the API itself; a context with
 * nothing of an effect in it (`mutates` false, no arguments, trusted, no provenance).
 *
 * Decisions: `Allow` serves the request; `Deny` is 403 with the policy's reason; so is
 * `RequireApproval`, because a route cannot wait for a person (decision: a policy that wants
 * approval on a route is answered as a refusal that says so, never as an allow). A fault of the
 * engine is a 500 (`AuthorizerUnavailable`), never an allow.
 */
import { Effect, Layer, Metric } from "effect"
import { Context, PolicyRequest, Principal, type Resource } from "../domain/PolicyRequest.js"
import { PolicyEngine } from "../services/PolicyEngine.js"
import { type Action, Authorizer, AuthorizerUnavailable, denials, Forbidden } from "./Authorizer.js"
import type { Caller } from "./Caller.js"

export const layer: Layer.Layer<Authorizer, never, PolicyEngine> = Layer.effect(
  Authorizer,
  Effect.map(PolicyEngine, (engine) =>
    Authorizer.of({
      authorize: (caller, action, resource) =>
        engine.decide(requestOf(caller, action, resource)).pipe(
          Effect.mapError(
            (e) => new AuthorizerUnavailable({ message: `the policy could not decide ${action}: ${e.message}` }),
          ),
          Effect.flatMap((decision) => {
            if (decision._tag === "Allow") return Effect.void
            const message =
              decision._tag === "Deny"
                ? decision.reason
                : `${action} needs approval by ${decision.roles.join(", ")} (${decision.reason}), which a request cannot wait for`
            return Effect.zipRight(
              Metric.increment(Metric.tagged(denials, "action", action)),
              Effect.fail(new Forbidden({ action, message })),
            )
          }),
        ),
    }),
  ),
)

/** The question a route asks about `caller`. */
const requestOf = (caller: Caller, action: Action, resource?: string): PolicyRequest =>
  new PolicyRequest({
    principal: new Principal({
      capability: caller.actor,
      governedBy: caller.actor,
      tenant: caller.tenant,
      admittedBy: caller.actor,
      roles: caller.roles,
    }),
    action,
    resource: resourceOf(resource),
    context: new Context({ mutates: false, phase: "forward", args: null, label: "trusted", provenances: [] }),
  })

const resourceOf = (resource: string | undefined): Resource =>
  resource?.startsWith("case_") === true
    ? { _tag: "Case", id: resource }
    : resource?.startsWith("run_") === true
      ? { _tag: "Run", id: resource }
      : { _tag: "Api" }
