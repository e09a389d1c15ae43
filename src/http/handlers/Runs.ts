/**
 * Run routes (§8.2): runs by outcome, one run's head, outcome, case and suspend reason, and the
 * cancellation request. A run is found in the caller's tenant only, so another tenant's run is
 * an unknown one (404).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import type { RunId } from "../../domain/Ids.js"
import { NotFound } from "../../errors/StoreError.js"
import { Runtime } from "../../runtime/Runtime.js"
import { JournalStore } from "../../services/JournalStore.js"
import { Api } from "../Api.js"
import * as Wire from "../Wire.js"
import * as Guard from "./Guard.js"

export const layer = HttpApiBuilder.group(Api, "runs", (handlers) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const runtime = yield* Runtime
    /** The run's head, or `NotFound` when the tenant has no record of it. */
    const known = (run: RunId) =>
      Effect.flatMap(journal.head(run), (head) =>
        head.seq === 0 ? Effect.fail(new NotFound({ what: run })) : Effect.succeed(head),
      )
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.list")
          return yield* journal
            .runsByOutcome(urlParams.outcome ?? "quarantined", Wire.limitOf(urlParams.limit))
            .pipe(Guard.asTenant(caller))
        }),
      )
      .handle("read", ({ path }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.read", path.run)
          return yield* Effect.gen(function* () {
            const head = yield* known(path.run)
            // Only the last record: a run's journal may be long, its state is at the end.
            const [last] = yield* journal.read(path.run, head.seq)
            return Wire.runView(path.run, head, last)
          }).pipe(Guard.asTenant(caller))
        }),
      )
      .handle("cancel", ({ path, payload }) =>
        Effect.gen(function* () {
          const caller = yield* Guard.authorize("api:run.cancel", path.run)
          return yield* Effect.gen(function* () {
            yield* known(path.run)
            const requested = yield* runtime.cancel(path.run, caller.actor, payload.reason)
            return { requested }
          }).pipe(Guard.asTenant(caller))
        }),
      )
  }),
)
