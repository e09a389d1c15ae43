/**
 * What every handler does first: authorise the caller for the route's action (deny by default),
 * then run the store calls as the caller's tenant. The tenant comes only from the credential.
 */
import { Clock, Effect } from "effect"
import { Tenant } from "../../domain/Tenant.js"
import * as Time from "../../domain/Time.js"
import { type Action, Authorizer } from "../Authorizer.js"
import type { Caller } from "../Caller.js"
import { CurrentCaller } from "../Caller.js"

/** The request's caller, once the authoriser allows it `action` (on `resource`, when one is named). */
export const authorize = (action: Action, resource?: string) =>
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    const authorizer = yield* Authorizer
    yield* authorizer.authorize(caller, action, resource)
    return caller
  })

/** Runs `effect` as the caller's tenant. */
export const asTenant =
  (caller: Caller) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Tenant>> =>
    Effect.provideService(effect, Tenant, caller.tenant)

/** The current instant in whole seconds. */
export const now: Effect.Effect<Time.Timestamp> = Effect.map(Clock.currentTimeMillis, Time.fromMillis)
