/**
 * KeyRing in memory (§9.1): the same contract as the table, each key wrapped by the KEK as it
 * would be stored, for users' own tests. Nothing survives the process.
 */
import { Effect, Either, Layer } from "effect"
import * as Aead from "../../erasure/Aead.js"
import * as Kek from "../../erasure/Kek.js"
import { Destroyed, KeyUnknown } from "../../errors/ErasureError.js"
import { Corrupt } from "../../errors/StoreError.js"
import { type DataKey, KeyRing } from "../../services/KeyRing.js"
import { perTenantEither } from "./internal/Memory.js"

type Entry =
  | { readonly _tag: "Wrapped"; readonly wrapped: Uint8Array }
  | {
      readonly _tag: "Destroyed"
      readonly at: number
      readonly reason: string
    }

export const make = (kek: Kek.Kek): Effect.Effect<typeof KeyRing.Service> =>
  Effect.sync(() => {
    const atomically = perTenantEither(() => new Map<string, Entry>())

    const unwrapped = (
      tenant: string,
      scope: string,
      entry: Entry | undefined,
    ): Either.Either<DataKey, KeyUnknown | Destroyed | Corrupt> => {
      const full = `${tenant}/${scope}`
      if (entry === undefined) return Either.left(new KeyUnknown({ scope: full }))
      if (entry._tag === "Destroyed")
        return Either.left(new Destroyed({ scope: full, at: entry.at, reason: entry.reason }))
      return Either.mapBoth(Kek.unwrap(kek, full, entry.wrapped), {
        onLeft: (detail) => new Corrupt({ detail: `key ${full}: ${detail}`, seq: 0 }),
        onRight: (key) => ({ scope, key }),
      })
    }

    return KeyRing.of({
      dataKey: (scope) =>
        atomically((keys, tenant) => {
          if (!keys.has(scope)) {
            keys.set(scope, { _tag: "Wrapped", wrapped: Kek.wrap(kek, `${tenant}/${scope}`, Aead.generateKey()) })
          }
          return Either.mapLeft(unwrapped(tenant, scope, keys.get(scope)), (e) =>
            e._tag === "KeyUnknown" ? new Corrupt({ detail: `key ${e.scope} vanished`, seq: 0 }) : e,
          )
        }),

      open: (scope) => atomically((keys, tenant) => unwrapped(tenant, scope, keys.get(scope))),

      destroy: (scope, at, reason) =>
        atomically((keys) => {
          if (keys.get(scope)?._tag !== "Destroyed") keys.set(scope, { _tag: "Destroyed", at, reason })
          return Either.right(undefined)
        }),
    })
  })

export const layer = (kek: Kek.Kek): Layer.Layer<KeyRing> => Layer.effect(KeyRing, make(kek))
