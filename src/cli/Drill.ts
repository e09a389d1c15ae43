/**
 * `agentplane drill` (§8.3, §9.4): a live check of the case layer. Prints one JSON line per
 * artifact that is not present (erased by design, or a finding), then a summary line; exits 0,
 * or 2 when there is a finding, so a scheduled drill can page someone.
 *
 * Decision: the key ring is read only when a KEK is given (`Keys.ts`: `AGENTPLANE_KEK` or
 * `--kek-file`), in `--keys` or else the `key_ring` table of `--store`; without a KEK only blobs
 * are classified. Drill writes nothing, so it neither leaves nor checks the store's sealing mark.
 */
import { Command, Options } from "@effect/cli"
import { Config, Console, Effect, Either, Layer, Option } from "effect"
import * as Tenant from "../domain/Tenant.js"
import * as Drill from "../erasure/Drill.js"
import * as BlobStoreFs from "../layers/BlobStoreFs.js"
import * as BlobStoreSql from "../layers/BlobStoreSql.js"
import * as SqlStores from "../layers/SqlStores.js"
import * as Keys from "./Keys.js"
import * as StoreFlag from "./StoreFlag.js"

export const DEFAULT_BLOBS = "./agentplane-blobs"

/** `--blobs`: the BlobStore's directory, or `store` for the `blobs` table of `--store`. */
export const blobs = Options.text("blobs").pipe(
  Options.withDescription(
    `blob directory, or "store" for the blobs table of --store (env AGENTPLANE_BLOBS; default ${DEFAULT_BLOBS})`,
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_BLOBS")),
  Options.withDefault(DEFAULT_BLOBS),
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the tenant to drill (env AGENTPLANE_TENANT; default default)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault(Tenant.DEFAULT as string),
)

export const command = Command.make(
  "drill",
  { store: StoreFlag.option, tenant, blobs, keying: Keys.options },
  ({ store, tenant, blobs, keying }) =>
    Effect.gen(function* () {
      const id = yield* Either.match(Tenant.parse(tenant), { onLeft: Effect.fail, onRight: Effect.succeed })
      const data = Keys.client(store)
      const stores = Layer.provide(SqlStores.layer, data)
      const blobLayer = blobs === "store" ? Layer.provide(BlobStoreSql.layer, data) : BlobStoreFs.layer({ root: blobs })
      const ring = Option.match(yield* Keys.resolve(keying, store), {
        onNone: () => Layer.empty,
        onSome: (r) => Keys.keyRing(store, r),
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
