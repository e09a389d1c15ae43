/**
 * The key ring of every verb that opens a store to write payloads (`serve`, `sweep`,
 * `seed-demo`) or to classify them (`drill`), §9.1. The KEK comes from `AGENTPLANE_KEK` (base64
 * text) or the file `--kek-file` names (env `AGENTPLANE_KEK_FILE`), never from a flag's value,
 * which would show in the process list. With a KEK the stores seal payloads, and the key ring
 * lives in `--keys` (env `AGENTPLANE_KEYS`), else in the `key_ring` table of `--store` itself.
 *
 * A SQLite store's KEK may also sit beside it, `<store>.kek` (`Kek.besideStore`): `serve` writes
 * one on a fresh store unless `--no-kek` says otherwise, so erasure works out of the box, and
 * every verb reads it when neither `AGENTPLANE_KEK` nor a KEK file is given.
 *
 * Decision (a sealed store opened without a key): refused, by the store's sealing mark
 * (`SealingMark.ts`): no KEK is `SealedWithoutKek`, another KEK is `SealedUnderOtherKek`, both
 * before anything is served. `export`, `verify`, `restore` and `forget-admissions` never open
 * payloads and do not check.
 */
import { existsSync } from "node:fs"
import { Options } from "@effect/cli"
import type { SqlClient } from "@effect/sql"
import { Config, Effect, Either, Layer, Option } from "effect"
import * as Kek from "../erasure/Kek.js"
import * as SealedStores from "../erasure/SealedStores.js"
import { KekInvalid, type SealedUnderOtherKek, type SealedWithoutKek } from "../errors/ErasureError.js"
import type { Backend } from "../errors/StoreError.js"
import * as SealingMark from "../layers/internal/SealingMark.js"
import * as KeyRingSql from "../layers/KeyRingSql.js"
import * as Migrations from "../layers/Migrations.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import type * as Stores from "../services/Stores.js"
import * as StoreFlag from "./StoreFlag.js"

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
    "file holding the key-encryption key, 32 random bytes in base64, e.g. from openssl rand -base64 32 (env AGENTPLANE_KEK_FILE; or the text itself in AGENTPLANE_KEK); absent: AGENTPLANE_KEK, else the KEK file beside a SQLite store (<store>.kek) when there is one, else no KEK and payloads are stored in the clear",
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
  /** The KEK file beside a SQLite store it came from (`Kek.besideStore`), if it did. */
  readonly beside?: string
}

export { SealedUnderOtherKek, SealedWithoutKek } from "../errors/ErasureError.js"

/**
 * The key ring the flags and environment configure for `store`, else the one of the KEK file
 * beside a SQLite `store` when it exists: none without either. Both `AGENTPLANE_KEK` and a KEK
 * file, an unreadable or malformed KEK, or `--keys` without a KEK are `KekInvalid`.
 */
export const resolve = (keying: Keying, store: string): Effect.Effect<Option.Option<Ring>, KekInvalid> =>
  Effect.flatMap(fromFlags(keying), (ring) =>
    Option.isSome(ring) || StoreFlag.isPostgres(store)
      ? Effect.succeed(ring)
      : Effect.map(Kek.fromFileIfPresent(Kek.besideStore(store)), (kek) =>
          Option.map(kek, (k): Ring => ({ kek: k, keys: keying.keys, beside: Kek.besideStore(store) })),
        ),
  )

/**
 * `serve`'s key ring out of the box: `ring` when one is configured, else, on a fresh SQLite
 * `store` (neither the file nor its KEK file exists yet), a new KEK written beside it. A SQLite
 * file that already exists without a KEK file stays as it is: it may hold payloads in the clear,
 * which a KEK from now on would leave out of erasure's reach beside the sealed.
 */
export const outOfTheBox = (
  store: string,
  ring: Option.Option<Ring>,
  keys: Option.Option<string>,
): Effect.Effect<Option.Option<Ring>, KekInvalid> =>
  Option.isSome(ring) || StoreFlag.isPostgres(store) || existsSync(store)
    ? Effect.succeed(ring)
    : Effect.map(Kek.create(Kek.besideStore(store)), (kek) =>
        Option.some({ kek, keys, beside: Kek.besideStore(store) }),
      )

/** The key ring of the flags and the environment alone, never the store's KEK file. */
export const fromFlags = (keying: Keying): Effect.Effect<Option.Option<Ring>, KekInvalid> =>
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
export const client = (store: string): Layer.Layer<SqlClient.SqlClient, Backend | StoreFlag.StoreInvalid> =>
  Either.match(StoreFlag.check(store), {
    onLeft: Layer.fail,
    onRight: (checked) =>
      Layer.provideMerge(
        Layer.fresh(Migrations.layer),
        StoreFlag.isPostgres(checked)
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
  timeouts: StoreFlag.Timeouts,
  ring: Option.Option<Ring>,
): Layer.Layer<Stores.Stores, Backend | StoreFlag.StoreInvalid | SealedWithoutKek | SealedUnderOtherKek> => {
  // After `StoreFlag.layer`, so the store is migrated (the mark's table exists) and a file that
  // cannot be opened is named the way every verb names it.
  const checked = Layer.flatMap(StoreFlag.layer(store, timeouts), (context) =>
    Layer.effectContext(
      Effect.as(
        Effect.scoped(
          Layer.build(client(store)).pipe(
            Effect.flatMap((c) =>
              Effect.provide(
                SealingMark.check(
                  StoreFlag.show(store),
                  Option.map(ring, (r) => r.kek.id),
                ),
                c,
              ),
            ),
          ),
        ),
        context,
      ),
    ),
  )
  return Option.match(ring, {
    onNone: () => checked,
    onSome: (r) => SealedStores.over(checked).pipe(Layer.provide(keyRing(store, r))),
  })
}
