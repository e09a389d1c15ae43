/**
 * KeyRing over `SqlClient` (table `key_ring`, migration 0005): data keys wrapped by the
 * operator's KEK, one row per (tenant, scope). Destroying clears `wrapped` and keeps the row as a
 * tombstone, so a destroyed scope is never given a fresh key that would make it look alive.
 *
 * The client may be the stores' own database or one of its own; only the latter lets erasure
 * reach database backups (a backup holding the wrapped keys opens with the KEK), see KeyRing.ts.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Option, Schema } from "effect"
import { Tenant } from "../domain/Tenant.js"
import * as Aead from "../erasure/Aead.js"
import * as Kek from "../erasure/Kek.js"
import { Destroyed, KekMismatch, KeyUnknown } from "../errors/ErasureError.js"
import { Corrupt } from "../errors/StoreError.js"
import { KeyRing } from "../services/KeyRing.js"
import { decodeRows, Int8 } from "./internal/Columns.js"
import * as Sql from "./internal/Sql.js"

export const make = (kek: Kek.Kek) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const stored = (tenant: string, scope: string) =>
      sql`SELECT kek_id, wrapped, destroyed_at, reason FROM key_ring WHERE tenant = ${tenant} AND scope = ${scope}`.pipe(
        Effect.flatMap(decodeRows(KeyRow, "key_ring")),
        Effect.map((rows) => Option.fromNullable(rows[0])),
      )

    /** A row → the data key in the clear, or why not. */
    const unwrapped = (tenant: string, scope: string, row: KeyRow) => {
      const full = `${tenant}/${scope}`
      if (row.destroyed_at !== null) {
        return Effect.fail(new Destroyed({ scope: full, at: row.destroyed_at, reason: row.reason ?? "" }))
      }
      if (row.wrapped === null || row.kek_id === null) {
        return Effect.fail(new Corrupt({ detail: `key_ring ${full}: neither a key nor a tombstone`, seq: 0 }))
      }
      if (row.kek_id !== kek.id) {
        return Effect.fail(new KekMismatch({ scope: full, stored: row.kek_id, supplied: kek.id }))
      }
      return Either.match(Kek.unwrap(kek, full, row.wrapped), {
        onLeft: (detail) => Effect.fail(new Corrupt({ detail: `key_ring ${full}: ${detail}`, seq: 0 })),
        onRight: (key) => Effect.succeed({ scope, key }),
      })
    }

    const open = (scope: string) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const row = yield* stored(tenant, scope)
        if (Option.isNone(row)) return yield* new KeyUnknown({ scope: `${tenant}/${scope}` })
        return yield* unwrapped(tenant, scope, row.value)
      })

    return KeyRing.of({
      dataKey: (scope) =>
        Effect.gen(function* () {
          const tenant = yield* Tenant
          // The common case, a scope already keyed, costs one read.
          const found = yield* stored(tenant, scope)
          if (Option.isSome(found)) return yield* unwrapped(tenant, scope, found.value)
          // Concurrent first uses each offer a key; the primary key keeps the first, and every
          // caller then reads and uses that one. A tombstone holds the key too, so a destroyed
          // scope is never given a new key.
          const offered = Kek.wrap(kek, `${tenant}/${scope}`, Aead.generateKey())
          yield* sql`
            INSERT INTO key_ring (tenant, scope, kek_id, wrapped, destroyed_at, reason)
            VALUES (${tenant}, ${scope}, ${kek.id}, ${Buffer.from(offered)}, NULL, NULL)
            ON CONFLICT (tenant, scope) DO NOTHING`
          return yield* open(scope).pipe(
            Effect.catchTag("KeyUnknown", (e) =>
              Effect.fail(new Corrupt({ detail: `key_ring ${e.scope}: the key just stored is gone`, seq: 0 })),
            ),
          )
        }).pipe(Sql.orBackend),

      open: (scope) => Sql.orBackend(open(scope)),

      destroy: (scope, at, reason) =>
        Effect.gen(function* () {
          const tenant = yield* Tenant
          // One statement, so concurrent destroys cannot interleave: the first `at` and `reason`
          // stand (COALESCE keeps them), and the wrapped key is gone either way.
          yield* sql`
            INSERT INTO key_ring (tenant, scope, kek_id, wrapped, destroyed_at, reason)
            VALUES (${tenant}, ${scope}, NULL, NULL, ${at}, ${reason})
            ON CONFLICT (tenant, scope) DO UPDATE SET
              wrapped = NULL,
              destroyed_at = COALESCE(key_ring.destroyed_at, excluded.destroyed_at),
              reason = COALESCE(key_ring.reason, excluded.reason)`
        }).pipe(Sql.orBackend),
    })
  })

export const layer = (kek: Kek.Kek): Layer.Layer<KeyRing, never, SqlClient.SqlClient> =>
  Layer.effect(KeyRing, make(kek))

// internal

const KeyRow = Schema.Struct({
  kek_id: Schema.NullOr(Schema.String),
  wrapped: Schema.NullOr(Schema.Uint8ArrayFromSelf),
  destroyed_at: Schema.NullOr(Int8),
  reason: Schema.NullOr(Schema.String),
})
type KeyRow = typeof KeyRow.Type
