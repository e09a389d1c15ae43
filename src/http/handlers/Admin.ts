/**
 * The emergency stop (§5.6): `PUT /admin/halt` sets it for every instance serving the tenant,
 * `DELETE /admin/halt` lifts it (a no-op when unset).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { QuotaStore } from "../../services/QuotaStore.js"
import { Api } from "../Api.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function* () {
    const quota = yield* QuotaStore
    return handlers
      .handle("halt", ({ payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:admin.halt")
          yield* quota.setHalt(Option.some(payload.reason)).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("unhalt", () =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:admin.halt")
          yield* quota.setHalt(Option.none()).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)
