/**
 * Seals and opens payload values through the key ring, for the decorating stores. Writing under
 * a destroyed scope is refused; reading a value whose scope was destroyed gives the sealed text
 * back unchanged: the record or row still reads, its content is gone, by design.
 */
import { Effect, Either } from "effect"
import type { Json } from "../domain/Json.js"
import { Tenant } from "../domain/Tenant.js"
import { Backend, Corrupt } from "../errors/StoreError.js"
import type { KeyRing } from "../services/KeyRing.js"
import * as Sealed from "./Sealed.js"

export interface Sealer {
  /** `value` sealed under `scope` of the caller's tenant (its key made on first use). */
  readonly seal: (scope: string, value: Json) => Effect.Effect<string, Backend | Corrupt, Tenant>
  /** A sealed `value` opened, a destroyed scope's left sealed, plaintext as it is; a value that does not authenticate is `Corrupt`. */
  readonly open: (value: Json) => Effect.Effect<Json, Backend | Corrupt, Tenant>
}

export const make = (ring: typeof KeyRing.Service): Sealer => ({
  seal: (scope, value) =>
    Effect.gen(function* () {
      const tenant = yield* Tenant
      const key = yield* ring.dataKey(scope).pipe(
        Effect.catchTags({
          // Decision: new content for an erased scope (a late step of an erased case) is refused
          // as a backend failure, the one failure every store verb already declares; it names why.
          Destroyed: (e) => Effect.fail(new Backend({ detail: `backend: refusing to write: ${e.message}` })),
          KekMismatch: (e) => Effect.fail(new Backend({ detail: `backend: ${e.message}` })),
        }),
      )
      return Sealed.seal(tenant, scope, key.key, value)
    }),

  open: (value) =>
    Effect.gen(function* () {
      if (!Sealed.isSealed(value)) return value
      const tenant = yield* Tenant
      const scope = yield* Either.match(Sealed.scopeOf(value), {
        onLeft: (detail) => Effect.fail(new Corrupt({ detail: `sealed value: ${detail}`, seq: 0 })),
        onRight: Effect.succeed,
      })
      const key = yield* ring.open(scope).pipe(
        Effect.map(Either.right),
        Effect.catchTags({
          Destroyed: () => Effect.succeed(Either.left(value)),
          KeyUnknown: (e) => Effect.fail(new Corrupt({ detail: `sealed value: ${e.message}`, seq: 0 })),
          KekMismatch: (e) => Effect.fail(new Backend({ detail: `backend: ${e.message}` })),
        }),
      )
      if (Either.isLeft(key)) return key.left
      return yield* Either.match(Sealed.open(tenant, key.right.key, value), {
        onLeft: (detail) =>
          Effect.fail(new Corrupt({ detail: `sealed value under ${tenant}/${scope}: ${detail}`, seq: 0 })),
        onRight: Effect.succeed,
      })
    }),
})
