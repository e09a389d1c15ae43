/**
 * `GET /runs/{run}/journal` (`RunJournalApi.ts`): a page of the run's records in the caller's
 * tenant; another tenant's run, like an unwritten one, is unknown (404).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import type { Json } from "../../domain/Json.js"
import { NotFound } from "../../errors/StoreError.js"
import { JournalStore } from "../../services/JournalStore.js"
import { Api } from "../Api.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "journal", (handlers) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    return handlers.handle("read", ({ path, urlParams }) =>
      Effect.gen(function* () {
        const caller = yield* Guard.authorize("api:run.journal", path.run)
        const limit = Wire.limitOf(urlParams.limit)
        return yield* Effect.gen(function* () {
          const head = yield* journal.head(path.run)
          if (head.seq === 0) return yield* new NotFound({ what: path.run })
          // One record past the limit tells whether the page was cut.
          const records = yield* journal.readPage(path.run, urlParams.from ?? 1, limit + 1)
          return Wire.page(records, limit, (r) => ({
            seq: r.seq,
            step: r.step,
            phase: r.phase,
            effect: r.effectKey,
            hash: r.hash,
            // A record's payload is JSON by construction (it was hashed as canonical JSON).
            record: r.kind as Json,
          }))
        }).pipe(Guard.asTenant(caller))
      }),
    )
  }),
)
