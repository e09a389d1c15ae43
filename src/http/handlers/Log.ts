/**
 * `GET /log/checkpoint`, `/log/inclusion`, `/log/consistency` (`LogApi.ts`): the caller tenant's
 * transparency log; a size left out is the latest checkpoint's, and a log with none yet is 404.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { NotFound } from "../../errors/StoreError.js"
import { LogStore } from "../../services/LogStore.js"
import { Api } from "../Api.js"
import * as LogJson from "../LogJson.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "log", (handlers) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const latest = Effect.flatMap(log.checkpoint(), (cp) =>
      Option.match(cp, { onNone: () => Effect.fail(new NotFound({ what: "checkpoint" })), onSome: Effect.succeed }),
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
