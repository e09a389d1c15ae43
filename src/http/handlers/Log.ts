/**
 * `GET /log/checkpoint`, `/log/inclusion`, `/log/consistency` (`LogApi.ts`): the caller tenant's
 * transparency log; a size left out is the latest checkpoint's. A server that signs the log
 * (`serve --log-key`) answers a log with no checkpoint yet with the empty tree's, signed then and
 * stored once (`LogStore.signEmpty`), so an auditor can keep one before anything is sealed; one
 * without the key can sign nothing, and a log with no checkpoint is 404 there.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Context, Effect, Option } from "effect"
import type { LogKey } from "../../domain/LogKey.js"
import { NotFound } from "../../errors/StoreError.js"
import { latestCheckpoint } from "../../runtime/LatestCheckpoint.js"
import { LogStore } from "../../services/LogStore.js"
import { Api } from "../Api.js"
import * as LogJson from "../LogJson.js"
import * as Guard from "./Guard.js"

/** The key the server signs the log with (`--log-key`); none unless the server says so. */
export class Signing extends Context.Reference<Signing>()("agentplane/http/LogSigning", {
  defaultValue: (): Option.Option<LogKey> => Option.none(),
}) {}

export const layer = HttpApiBuilder.group(Api, "log", (handlers) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const key = yield* Signing
    const latest = Effect.flatMap(
      Effect.provideService(latestCheckpoint(key), LogStore, log),
      Option.match({ onNone: () => new NotFound({ what: "checkpoint" }), onSome: Effect.succeed }),
    )
    const sizeOr = (size: number | undefined) =>
      size === undefined ? Effect.map(latest, (cp) => cp.size) : Effect.succeed(size)
    return handlers
      .handle("checkpoint", () =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:log.read")
          return yield* Effect.map(latest, LogJson.checkpoint).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("inclusion", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:log.read")
          return yield* Effect.gen(function* () {
            const proof = yield* log.inclusionProof(urlParams.run, yield* sizeOr(urlParams.size))
            return LogJson.inclusion(proof)
          }).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("consistency", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:log.read")
          return yield* Effect.gen(function* () {
            const to = yield* sizeOr(urlParams.to)
            return LogJson.consistency(urlParams.from, to, yield* log.consistencyProof(urlParams.from, to))
          }).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)
