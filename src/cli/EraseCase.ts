/**
 * `agentplane erase-case` (§9.1): erases one case of a tenant, its blobs expired and then its key
 * scopes destroyed, and prints what it did as one JSON line. Re-running it finishes an erasure
 * that was interrupted, and on a finished one expires nothing (exit 0 either way).
 *
 * Decision: §8.3 lists no erasure verb and no route erases, but `eraseCase` was a library call
 * only, so a deployment had no way to honour an erasure request short of writing code against
 * the stores. A verb, not a route: erasure is an operator's act on one matter, rare and
 * irreversible, and a route would put it one credential away from every caller of the API. It
 * opens the stores as `serve` does (`Keys.ts`): a sealed store without its KEK is refused, since
 * an erasure that cannot destroy the key would only expire the blobs and report success. For the
 * same reason a store with no key ring is refused (exit 2, `PayloadsStayReadable`, nothing
 * changed) unless `--blobs-only` asks for the blobs alone; the report says `payloadsSealed`.
 */
import { Command, Options } from "@effect/cli"
import { Clock, Config, Console, Effect, Either, Layer, Option } from "effect"
import { parseCaseId } from "../domain/Ids.js"
import * as Tenant from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { eraseCase } from "../erasure/EraseCase.js"
import { PayloadsStayReadable } from "../errors/ErasureError.js"
import * as BlobStoreFs from "../layers/BlobStoreFs.js"
import * as BlobStoreSql from "../layers/BlobStoreSql.js"
import * as Drill from "./Drill.js"
import * as Keys from "./Keys.js"
import * as StoreFlag from "./StoreFlag.js"

const kase = Options.text("case").pipe(
  Options.withDescription("required: the case to erase, case_… (env AGENTPLANE_CASE)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_CASE")),
)

const reason = Options.text("reason").pipe(
  Options.withDescription(
    "required: why, kept with every tombstone and destroyed key, e.g. a ticket number (env AGENTPLANE_REASON)",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_REASON")),
)

const blobsOnly = Options.boolean("blobs-only").pipe(
  Options.withDescription(
    "on a store with no key ring, expire the case's blobs alone and say its payloads stay readable (without it such an erasure is refused)",
  ),
)

const tenant = Options.text("tenant").pipe(
  Options.withDescription("the case's tenant (env AGENTPLANE_TENANT); default default"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_TENANT")),
  Options.withDefault(Tenant.DEFAULT as string),
)

export const command = Command.make(
  "erase-case",
  { store: StoreFlag.option, tenant, case: kase, reason, blobs: Drill.blobs, keying: Keys.options, blobsOnly },
  (options) =>
    Effect.gen(function* () {
      const id = yield* Either.match(Tenant.parse(options.tenant), { onLeft: Effect.fail, onRight: Effect.succeed })
      const target = yield* Either.match(parseCaseId(options.case), { onLeft: Effect.fail, onRight: Effect.succeed })
      const ring = yield* Keys.resolve(options.keying, options.store)
      const client = Keys.client(options.store)
      const blobs =
        options.blobs === "store"
          ? Layer.provide(BlobStoreSql.layer, client)
          : BlobStoreFs.layer({ root: options.blobs })
      const keyRing = Option.match(ring, { onNone: () => Layer.empty, onSome: (r) => Keys.keyRing(options.store, r) })
      const at = Time.fromMillis(yield* Clock.currentTimeMillis)
      const expired = yield* eraseCase(target, at, options.reason, { blobsOnly: options.blobsOnly }).pipe(
        Effect.provideService(Tenant.Tenant, id),
        Effect.provide(Layer.mergeAll(Keys.stores(options.store, StoreFlag.NO_TIMEOUTS, ring), blobs, keyRing)),
        Effect.map(Option.some),
        // Exit 2, as a sweep that needs attention: the operator asked for something not done.
        Effect.catchIf(
          (e): e is PayloadsStayReadable => e instanceof PayloadsStayReadable,
          (e) =>
            Effect.zipRight(
              Console.error(`agentplane: ${e.message}`),
              Effect.sync(() => {
                process.exitCode = 2
                return Option.none<number>()
              }),
            ),
        ),
      )
      if (Option.isNone(expired)) return
      yield* Console.log(
        JSON.stringify({
          kind: "agentplane.erase.done",
          case: target,
          expired: expired.value,
          keysDestroyed: Option.isSome(ring),
          payloadsSealed: Option.isSome(ring),
          at,
        }),
      )
    }),
).pipe(
  Command.withDescription(
    "erase one case: expire its blobs, then destroy its keys; re-run to finish an interrupted erasure; prints a JSON line",
  ),
)
