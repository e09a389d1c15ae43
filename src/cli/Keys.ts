/**
 * The key ring of every verb that opens a store to write payloads (`serve`, `sweep`,
 * `seed-demo`) or to classify them (`drill`), §9.1. The KEK comes from `AGENTPLANE_KEK` (base64
 * text) or the file `--kek-file` names (env `AGENTPLANE_KEK_FILE`), never from a flag's value,
 * which would show in the process list. With a KEK the stores seal payloads, and the key ring
 * lives in `--keys` (env `AGENTPLANE_KEYS`), else in the `key_ring` table of `--store` itself.
 *
 * Decision (a sealed store opened without a key): refused. A verb that writes payloads with no
 * key ring would put new content in the clear beside the sealed, where erasing the case cannot
 * reach it, and read the sealed as ciphertext strings; so the first keyed open leaves a mark in
 * the store (a `key_ring` row under the empty tenant, which `Tenant.parse` refuses, so no
 * tenant's scope can ever be it) naming the KEK's fingerprint, and every later open checks it: no
 * KEK is `SealedWithoutKek`, another KEK is `SealedUnderOtherKek`, both before anything is served.
 * `export`, `verify`, `restore` and `forget-admissions` never open payloads and do not check.
 */
import { Options } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Config, Effect, Either, Layer, Option, Schema } from "effect"
import * as Kek from "../erasure/Kek.js"
import * as SealedStores from "../erasure/SealedStores.js"
import { KekInvalid } from "../errors/ErasureError.js"
import { Backend } from "../errors/StoreError.js"
import * as Sql from "../layers/internal/Sql.js"
import * as KeyRingSql from "../layers/KeyRingSql.js"
import * as Migrations from "../layers/Migrations.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import type * as Stores from "../services/Stores.js"
import * as Store from "./Store.js"

/** `--keys`: the key ring's database, a SQLite file or a postgres:// URL. */
export const keys = Options.text("keys").pipe(
  Options.withDescription(
    "the key ring's database: SQLite file or postgres:// URL (env AGENTPLANE_KEYS), kept apart so a backup of --store holds no wrapped key; taken only with a KEK; absent: the key_ring table of --store",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_KEYS")),
  Options.optional,
)

/** `--kek-file`: the file holding the KEK. */
export const kekFile = Options.file("kek-file").pipe(
  Options.withDescription(
    "file holding the key-encryption key, 32 random bytes in base64, e.g. from openssl rand -base64 32 (env AGENTPLANE_KEK_FILE; or the text itself in AGENTPLANE_KEK); absent: no KEK unless AGENTPLANE_KEK is set, and payloads are stored in the clear",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_KEK_FILE")),
  Options.optional,
)

/** What the two flags gave. */
export interface Keying {
  readonly keys: Option.Option<string>
  readonly kekFile: Option.Option<string>
}

export const options: Options.Options<Keying> = Options.all({ keys, kekFile })

export const NONE: Keying = { keys: Option.none(), kekFile: Option.none() }

/** A configured key ring: the KEK, and the key ring's own database if not `--store`'s. */
export interface Ring {
  readonly kek: Kek.Kek
  readonly keys: Option.Option<string>
}

/** `--store` holds sealed payloads (its mark says so) but no KEK was given. */
export class SealedWithoutKek extends Schema.TaggedError<SealedWithoutKek>()("SealedWithoutKek", {
  store: Schema.String,
  kekId: Schema.String,
}) {
  override get message(): string {
    return `store ${this.store} holds payloads sealed under KEK ${this.kekId}, but no KEK was given: set AGENTPLANE_KEK or --kek-file (env AGENTPLANE_KEK_FILE) to that KEK; without it new payloads would be written in the clear, out of erasure's reach`
  }
}

/** `--store` was sealed under another KEK than the one given. */
export class SealedUnderOtherKek extends Schema.TaggedError<SealedUnderOtherKek>()("SealedUnderOtherKek", {
  store: Schema.String,
  stored: Schema.String,
  supplied: Schema.String,
}) {
  override get message(): string {
    return `store ${this.store} is sealed under KEK ${this.stored}, but the KEK given (AGENTPLANE_KEK or --kek-file) is ${this.supplied}: give the KEK the store was sealed with`
  }
}

/**
 * The key ring the flags and environment configure: none without a KEK. Both `AGENTPLANE_KEK`
 * and a KEK file, an unreadable or malformed KEK, or `--keys` without a KEK are `KekInvalid`.
 */
export const resolve = (keying: Keying): Effect.Effect<Option.Option<Ring>, KekInvalid> =>
  Effect.gen(function* () {
    const kek = yield* Option.match(keying.kekFile, {
      onSome: (path) =>
        Effect.flatMap(
          Effect.orElseSucceed(Config.option(Config.redacted("AGENTPLANE_KEK")), () => Option.none()),
          (inline) =>
            Option.isSome(inline)
              ? Effect.fail(
                  new KekInvalid({
                    detail: "both AGENTPLANE_KEK and --kek-file (or AGENTPLANE_KEK_FILE) are given; give one",
                  }),
                )
              : Effect.asSome(Kek.fromFile(path)),
        ),
      onNone: () => Kek.fromEnvironment,
    })
    if (Option.isNone(kek)) {
      if (Option.isSome(keying.keys)) {
        return yield* new KekInvalid({
          detail: "--keys (or AGENTPLANE_KEYS) names a key ring but no KEK was given: set AGENTPLANE_KEK or --kek-file",
        })
      }
      return Option.none()
    }
    return Option.some({ kek: kek.value, keys: keying.keys })
  })

/** A migrated client on `store` (checked as `--store` is). */
export const client = (store: string): Layer.Layer<SqlClient.SqlClient, Backend | Store.StoreInvalid> =>
  Either.match(Store.check(store), {
    onLeft: Layer.fail,
    onRight: (checked) =>
      Layer.provideMerge(
        Layer.fresh(Migrations.layer),
        Store.isPostgres(checked)
          ? PgBackend.layerClient({ url: checked })
          : SqliteBackend.layerClient({ filename: checked }),
      ),
  })

/** The key ring of `ring` for the store `store`: in `--keys`, else in `store` itself. */
export const keyRing = (store: string, ring: Ring) =>
  KeyRingSql.layer(ring.kek).pipe(Layer.provide(client(Option.getOrElse(ring.keys, () => store))))

/**
 * Every store on `store`, sealing through `ring`'s key ring when one is configured, after the
 * store's mark is checked (and, keyed, left): see the module's decision.
 */
export const stores = (
  store: string,
  timeouts: Store.Timeouts,
  ring: Option.Option<Ring>,
): Layer.Layer<Stores.Stores, Backend | Store.StoreInvalid | SealedWithoutKek | SealedUnderOtherKek> => {
  // After `Store.layer`, so the store is migrated (the mark's table exists) and a file that
  // cannot be opened is named the way every verb names it.
  const checked = Layer.flatMap(Store.layer(store, timeouts), (context) =>
    Layer.effectContext(
      Effect.as(
        Effect.scoped(Layer.build(client(store)).pipe(Effect.flatMap((c) => Effect.provide(mark(store, ring), c)))),
        context,
      ),
    ),
  )
  return Option.match(ring, {
    onNone: () => checked,
    onSome: (r) => SealedStores.over(checked).pipe(Layer.provide(keyRing(store, r))),
  })
}

// internal

// The mark's row: the empty tenant is no tenant (`Tenant.parse` refuses it).
const MARK_TENANT = ""
const MARK_SCOPE = "agentplane.sealing"

const MarkRow = Schema.Array(Schema.Struct({ kek_id: Schema.NullOr(Schema.String) }))

/** Checks `store`'s mark against `ring`, and leaves it when keyed (idempotent: the first KEK stands). */
const mark = (store: string, ring: Option.Option<Ring>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const read = sql`SELECT kek_id FROM key_ring WHERE tenant = ${MARK_TENANT} AND scope = ${MARK_SCOPE}`.pipe(
      Effect.flatMap(Schema.decodeUnknown(MarkRow)),
      Effect.map((rows) => Option.fromNullable(rows[0]?.kek_id)),
      Effect.catchTag("ParseError", (e) => Effect.fail(new Backend({ detail: `key_ring mark: ${e.message}` }))),
    )
    if (Option.isSome(ring)) {
      yield* sql`
        INSERT INTO key_ring (tenant, scope, kek_id, wrapped, destroyed_at, reason)
        VALUES (${MARK_TENANT}, ${MARK_SCOPE}, ${ring.value.kek.id}, NULL, NULL, ${"payloads of this store are sealed (§9.1)"})
        ON CONFLICT (tenant, scope) DO NOTHING`
    }
    const found = yield* read
    if (Option.isNone(found)) return
    if (Option.isNone(ring)) return yield* new SealedWithoutKek({ store: Store.show(store), kekId: found.value })
    if (found.value !== ring.value.kek.id) {
      return yield* new SealedUnderOtherKek({
        store: Store.show(store),
        stored: found.value,
        supplied: ring.value.kek.id,
      })
    }
  }).pipe(Sql.orBackend)
