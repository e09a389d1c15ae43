/**
 * Seals and opens payload values through the key ring, for the decorating stores. Writing under
 * a destroyed scope is refused; reading a value whose scope was destroyed gives the sealed text
 * back unchanged: the record or row still reads, its content is gone, by design.
 */
import { Effect, Either } from "effect"
import type { Json } from "../domain/Json.js"
import { Tenant } from "../domain/Tenant.js"
import type { Destroyed, KekMismatch, KeyUnknown } from "../errors/ErasureError.js"
import { Backend, Corrupt } from "../errors/StoreError.js"
import type { DataKey, KeyRing } from "../services/KeyRing.js"
import * as Sealed from "./Sealed.js"

export interface Sealer {
  /** `value` sealed under `scope` of the caller's tenant (its key made on first use). */
  readonly seal: (scope: string, value: Json) => Effect.Effect<string, Backend | Corrupt, Tenant>
  /**
   * A sealed `value` opened, a destroyed scope's left sealed, plaintext as it is; a value that does
   * not authenticate, or sealed under another scope than `expected` (where it was found), is `Corrupt`.
   */
  readonly open: (expected: string) => (value: Json) => Effect.Effect<Json, Backend | Corrupt, Tenant>
}

/**
 * A sealer for one store verb. Keys are looked up once per scope and verb, not once per field: a
 * replay reads every record of a run, nearly all under one scope. Nothing outlives the verb, so a
 * destroy is seen by the next verb.
 */
export const make = (ring: typeof KeyRing.Service): Sealer => {
  const made = new Map<string, DataKey>()
  const opened = new Map<string, Either.Either<DataKey, Destroyed | KeyUnknown | KekMismatch | Corrupt>>()

  const dataKey = (scope: string) => {
    const hit = made.get(scope)
    return hit !== undefined ? Effect.succeed(hit) : Effect.tap(ring.dataKey(scope), (key) => made.set(scope, key))
  }

  const openKey = (scope: string) => {
    const hit = opened.get(scope)
    if (hit !== undefined) return Effect.succeed(hit)
    // Only answers are kept: a backend failure is tried again by the next value.
    return Effect.catchIf(
      Effect.map(ring.open(scope), (key) => Either.right(key)),
      (e): e is Destroyed | KeyUnknown | KekMismatch | Corrupt => e._tag !== "Backend",
      (e) => Effect.succeed(Either.left(e)),
    ).pipe(Effect.tap((answer) => opened.set(scope, answer)))
  }

  return {
    seal: (scope, value) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const key = yield* dataKey(scope).pipe(
          Effect.catchTags({
            // Decision: new content for an erased scope (a late step of an erased case) is refused
            // as a backend failure, the one failure every store verb already declares; it names why.
            Destroyed: (e) => Effect.fail(new Backend({ detail: `backend: refusing to write: ${e.message}` })),
            KekMismatch: (e) => Effect.fail(new Backend({ detail: `backend: ${e.message}` })),
          }),
        )
        return Sealed.seal(tenant, scope, key.key, value)
      }),

    open: (expected) => (value) =>
      Effect.gen(function* () {
        if (!Sealed.isSealed(value)) return value
        const tenant = yield* Tenant
        const scope = yield* Either.match(Sealed.scopeOf(value), {
          onLeft: (detail) => Effect.fail(new Corrupt({ detail: `sealed value: ${detail}`, seq: 0 })),
          onRight: Effect.succeed,
        })
        // The box's scope is whatever it names; only the place it was read from says whose it
        // should be. Without this, a value copied from one case's row into another's would open
        // there, showing one case's content as another's.
        if (scope !== expected) {
          return yield* new Corrupt({
            detail: `a value sealed under ${scope} was found where ${expected} belongs`,
            seq: 0,
          })
        }
        const key = yield* openKey(scope)
        if (Either.isLeft(key)) {
          const e = key.left
          switch (e._tag) {
            case "Destroyed":
              return value
            case "KeyUnknown":
              return yield* new Corrupt({ detail: `sealed value: ${e.message}`, seq: 0 })
            case "KekMismatch":
              return yield* new Backend({ detail: `backend: ${e.message}` })
            case "Corrupt":
              return yield* e
          }
        }
        return yield* Either.match(Sealed.open(tenant, key.right.key, value), {
          onLeft: (detail) =>
            Effect.fail(new Corrupt({ detail: `sealed value under ${tenant}/${scope}: ${detail}`, seq: 0 })),
          onRight: Effect.succeed,
        })
      }),
  }
}
