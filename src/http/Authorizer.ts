/**
 * Authorisation (§8.1): each route names an action; the `Authorizer` decides whether the caller
 * may take it. Deny by default: an action no rule allows is refused.
 */
import { HttpApiSchema } from "@effect/platform"
import { Context, type Effect, Metric, Schema } from "effect"
import type { Caller } from "./Caller.js"

/** Every action a route can name; `api:task.*` style prefixes in a policy cover several. */
export const Action = Schema.Literal(
  "api:task.list",
  "api:task.read",
  "api:task.claim",
  "api:task.release",
  "api:task.takeover",
  "api:task.decide",
  "api:case.list",
  "api:case.read",
  "api:obligation.list",
  "api:event.deliver",
  "api:deadletter.list",
  "api:census.read",
  "api:admin.halt",
  "api:run.list",
  "api:run.read",
  "api:run.cancel",
  "api:run.start",
  "api:run.journal",
  "api:log.read",
  "api:policy.read",
)
export type Action = typeof Action.Type

/** Requests the authoriser refused, by action (§10). */
export const denials = Metric.counter("agentplane.policy.denials", {
  description: "requests the policy denied",
  incremental: true,
})

/** The authoriser refused the caller this action. */
export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { action: Action, message: Schema.String },
  HttpApiSchema.annotations({ status: 403 }),
) {}

/** The authoriser could not evaluate its policy: a server fault, not a refusal. */
export class AuthorizerUnavailable extends Schema.TaggedError<AuthorizerUnavailable>()(
  "AuthorizerUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500 }),
) {}

export class Authorizer extends Context.Tag("agentplane/http/Authorizer")<
  Authorizer,
  {
    /** Succeeds only when a rule allows `caller` to take `action` (on `resource`, when one is named); otherwise `Forbidden`. */
    readonly authorize: (
      caller: Caller,
      action: Action,
      resource?: string,
    ) => Effect.Effect<void, Forbidden | AuthorizerUnavailable>
  }
>() {}
