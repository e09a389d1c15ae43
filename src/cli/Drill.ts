/**
 * `agentplane drill` (§8.3, §9.4): a live check of the case layer. Prints one JSON line per
 * artifact that is not present (erased by design, or a finding), then a summary line; exits 0,
 * or 2 when there is a finding, so a scheduled drill can page someone.
 *
 * Decision: the key ring is read only when `--keys` names its database; without it only blobs
 * are classified. The KEK comes from `AGENTPLANE_KEK` or `--kek-file` (env `AGENTPLANE_KEK_FILE`),
 * never from a flag's value, which would show in the process list.
 */
import { Command, Options } from "@effect/cli"
import type { SqlClient } from "@effect/sql"
import { Config, Console, Effect, Either, Layer, Option } from "effect"
import * as Tenant from "../domain/Tenant.js"
import * as Drill from "../erasure/Drill.js"
import * as Kek from "../erasure/Kek.js"
import { KekInvalid } from "../errors/ErasureError.js"
import type { Backend } from "../errors/StoreError.js"
import * as BlobStoreFs from "../layers/BlobStoreFs.js"
import * as BlobStoreSql from "../layers/BlobStoreSql.js"
import * as KeyRingSql from "../layers/KeyRingSql.js"
import * as Migrations from "../layers/Migrations.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import * as SqlStores from "../layers/SqlStores.js"
import * as Store from "./Store.js"

export const DEFAULT_BLOBS = "./agentplane-blobs"

/** `--blobs`: the BlobStore's directory, or `store` for the `blobs` table of `--store`. */
export const blobs = Options.text("blobs").pipe(
  Options.withDescription(
    `blob directory, or "store" for the blobs table of --store (env AGENTPLANE_BLOBS; default ${DEFAULT_BLOBS})`,
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_BLOBS")),
  Options.withDefault(DEFAULT_BLOBS),
)

/** `--keys`: the key ring's database, a SQLite file or a postgres:// URL. */
export const keys = Options.text("keys").pipe(
  Options.withDescription(
    "the key ring's database: SQLite file or postgres:// URL (env AGENTPLANE_KEYS); the KEK from AGENTPLANE_KEK or --kek-file; absent: only blobs are classified",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_KEYS")),
  Options.optional,
)

export const kekFile = Options.file("kek-file").pipe(
  Options.withDescription(
    "file holding the key-encryption key, 32 bytes in base64 (env AGENTPLANE_KEK_FILE); absent: the KEK is AGENTPLANE_KEK",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_KEK_FILE")),
  Options.optional,
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant to drill (env AGENTPLANE_TENANT; default default)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault(Tenant.DEFAULT as string),
)

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

/** The KEK from `--kek-file`, else the environment; `KekInvalid` when neither gives one. */
const kekOf = (file: Option.Option<string>) =>
  Option.match(file, {
    onSome: (path) =>
      Effect.flatMap(
        Effect.flatMap(Config.option(Config.redacted("AGENTPLANE_KEK")), (inline) =>
          Option.isSome(inline)
            ? Effect.fail(new KekInvalid({ detail: "both AGENTPLANE_KEK and --kek-file are given; give one" }))
            : Effect.void,
        ),
        () => Kek.fromFile(path),
      ),
    onNone: () =>
      Effect.flatMap(Kek.fromEnvironment, (kek) =>
        Option.match(kek, {
          onSome: Effect.succeed,
          onNone: () =>
            Effect.fail(
              new KekInvalid({
                detail: "--keys names a key ring but no KEK was given: set AGENTPLANE_KEK or --kek-file",
              }),
            ),
        }),
      ),
  })

export const command = Command.make(
  "drill",
  { store: Store.option, tenant, blobs, keys, kekFile },
  ({ store, tenant, blobs, keys, kekFile }) =>
    Effect.gen(function* () {
      const id = yield* Either.match(Tenant.parse(tenant), { onLeft: Effect.fail, onRight: Effect.succeed })
      const data = client(store)
      const stores = Layer.provide(SqlStores.layer, data)
      const blobLayer = blobs === "store" ? Layer.provide(BlobStoreSql.layer, data) : BlobStoreFs.layer({ root: blobs })
      const ring = yield* Option.match(keys, {
        onNone: () => Effect.succeed(Layer.empty),
        onSome: (keyStore) =>
          Effect.map(kekOf(kekFile), (kek) => Layer.provide(KeyRingSql.layer(kek), client(keyStore))),
      })
      const report = yield* Drill.drill((artifact) =>
        artifact.verdict === "present"
          ? Effect.void
          : Console.log(JSON.stringify({ kind: "agentplane.drill.artifact", ...artifact })),
      ).pipe(Effect.provideService(Tenant.Tenant, id), Effect.provide(Layer.mergeAll(stores, blobLayer, ring)))
      yield* Console.log(
        JSON.stringify({
          kind: "agentplane.drill.summary",
          cases: report.cases,
          present: report.present,
          erased: report.erased,
          findings: report.findings.length,
        }),
      )
      // Exit 2 on a finding (§8.3: non-zero); `runMain` leaves a successful exit's code alone.
      if (report.findings.length > 0) yield* Effect.sync(() => (process.exitCode = 2))
    }),
).pipe(
  Command.withDescription(
    "classify every artifact of the tenant's cases as present, erased by design or a finding; one JSON line per artifact not present, then a summary; exit 2 on a finding",
  ),
)
