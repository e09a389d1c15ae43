/**
 * What every handler does first: authorise the caller for the route's action (deny by default),
 * then run the store calls as the caller's tenant. The tenant comes only from the credential.
 */
import { Cause, Clock, Effect } from "effect"
import { Tenant } from "../../domain/Tenant.js"
import * as Time from "../../domain/Time.js"
import { Backend } from "../../errors/StoreError.js"
import { type Action, Authorizer } from "../Authorizer.js"
import type { Caller } from "../Caller.js"
import { CurrentCaller } from "../Caller.js"
import * as Unavailable from "../Unavailable.js"

/** The request's caller, once the authoriser allows it `action` (on `resource`, when one is named). */
export const authorize = (action: Action, resource?: string) =>
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    const authorizer = yield* Authorizer
    yield* authorizer.authorize(caller, action, resource)
    return caller
  })

/**
 * Runs `effect` as the caller's tenant. A store outage (`Backend`) is logged with its cause and
 * answered as `Unavailable` with its reason only: the driver's text names indexes, hosts and
 * statements, which are the operator's to read, not the client's.
 */
export const asTenant =
  (caller: Caller) =>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>,
  ): Effect.Effect<A, Exclude<E, Backend> | Unavailable.Unavailable, Exclude<R, Tenant>> =>
    Effect.provideService(effect, Tenant, caller.tenant).pipe(
      Effect.catchIf(
        (e): e is E & Backend => e instanceof Backend,
        (e) => {
          const answer = Unavailable.fromBackend(e)
          return Effect.zipRight(
            Effect.logError("store unavailable", Cause.fail(e)).pipe(
              Effect.annotateLogs({ reason: answer.reason, tenant: caller.tenant }),
            ),
            Effect.fail(answer),
          )
        },
      ),
    ) as Effect.Effect<A, Exclude<E, Backend> | Unavailable.Unavailable, Exclude<R, Tenant>>

/** The current instant in whole seconds. */
export const now: Effect.Effect<Time.Timestamp> = Effect.map(Clock.currentTimeMillis, Time.fromMillis)
