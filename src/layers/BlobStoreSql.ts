/**
 * BlobStore over `SqlClient` (table `blobs`, migration 0005): one statement text for PostgreSQL
 * and SQLite, for deployments with no disk shared between instances. A tombstone is the row with
 * its bytes cleared; rows are never deleted, so the first expiry stands.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import * as Digest from "../domain/Digest.js"
import { Tenant } from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { BlobExpired } from "../errors/ErasureError.js"
import { Corrupt } from "../errors/StoreError.js"
import { BlobStore } from "../services/BlobStore.js"
import { decodeRows, digestParam, Int8 } from "./internal/Columns.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  const row = (tenant: string, digest: Digest.Digest) =>
    sql`SELECT bytes, expired_at, reason FROM blobs WHERE tenant = ${tenant} AND digest = ${digestParam(digest)}`.pipe(
      Effect.flatMap(decodeRows(BlobRow, "blobs")),
      Effect.map((rows) => Option.fromNullable(rows[0])),
    )

  const expiredOf = (digest: Digest.Digest, r: BlobRow) =>
    Option.map(Option.fromNullable(r.expired_at), (at) => new BlobExpired({ digest, at, reason: r.reason ?? "" }))

  return BlobStore.of({
    put: (bytes) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const digest = Digest.of(bytes)
        // Identical bytes are one blob: a repeat hits the key and changes nothing. A tombstone
        // also holds the key, so a put after expiry lands here too and is refused below.
        yield* sql`
          INSERT INTO blobs (tenant, digest, bytes, expired_at, reason)
          VALUES (${tenant}, ${digestParam(digest)}, ${Buffer.from(bytes)}, NULL, NULL)
          ON CONFLICT (tenant, digest) DO NOTHING`
        const stored = yield* row(tenant, digest).pipe(Effect.catchTag("Corrupt", () => Effect.succeed(Option.none())))
        const expired = Option.flatMap(stored, (r) => expiredOf(digest, r))
        if (Option.isSome(expired)) return yield* expired.value
        return digest
      }).pipe(Sql.orBackend),

    get: (digest) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const stored = yield* row(tenant, digest)
        if (Option.isNone(stored)) return Option.none()
        const expired = expiredOf(digest, stored.value)
        if (Option.isSome(expired)) return yield* expired.value
        const bytes = stored.value.bytes
        if (bytes === null) return yield* new Corrupt({ detail: `blob ${digest}: no bytes and no tombstone`, seq: 0 })
        // Checked on every read: the table is outside the chain, so nothing else would notice a changed byte.
        if (Digest.of(bytes) !== digest) {
          return yield* new Corrupt({ detail: `blob ${digest}: the stored bytes do not match their digest`, seq: 0 })
        }
        return Option.some(Uint8Array.from(bytes))
      }).pipe(Sql.orBackend),

    has: (digest) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT 1 AS present FROM blobs
           WHERE tenant = ${tenant} AND digest = ${digestParam(digest)} AND bytes IS NOT NULL AND expired_at IS NULL`
        return rows.length > 0
      }).pipe(Sql.orBackend),

    expire: (digest, at, reason) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const key = digestParam(digest)
        // Three single statements, no transaction: each is atomic, and their order settles every
        // race. The update expires a live row (a concurrent expiry waits for the row lock, then
        // re-reads `expired_at` and matches nothing). With no row, the insert lays a tombstone; if
        // a put's row appeared in between, the insert conflicts and the second update expires it.
        const expireLive = sql`
          UPDATE blobs SET bytes = NULL, expired_at = ${at}, reason = ${reason}
           WHERE tenant = ${tenant} AND digest = ${key} AND expired_at IS NULL
          RETURNING tenant`
        if ((yield* expireLive).length > 0) return true
        const laid = yield* sql`
          INSERT INTO blobs (tenant, digest, bytes, expired_at, reason)
          VALUES (${tenant}, ${key}, NULL, ${at}, ${reason})
          ON CONFLICT (tenant, digest) DO NOTHING
          RETURNING tenant`
        if (laid.length > 0) return true
        return (yield* expireLive).length > 0
      }).pipe(Sql.orBackend),

    tombstone: (digest) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const stored = yield* row(tenant, digest)
        return Option.flatMap(stored, (r) =>
          Option.map(Option.fromNullable(r.expired_at), (at) => ({
            at: Time.Timestamp.make(at),
            reason: r.reason ?? "",
          })),
        )
      }).pipe(Sql.orBackend),
  })
})

export const layer: Layer.Layer<BlobStore, never, SqlClient.SqlClient> = Layer.effect(BlobStore, make)

// internal

const BlobRow = Schema.Struct({
  bytes: Schema.NullOr(Schema.Uint8ArrayFromSelf),
  expired_at: Schema.NullOr(Int8),
  reason: Schema.NullOr(Schema.String),
})
type BlobRow = typeof BlobRow.Type
