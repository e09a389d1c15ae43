/**
 * The journal's `append` verb: an opening append (`Open`), one autocommitted statement on the
 * remembered head (pg), or the write path in a transaction with whatever rides alongside.
 */
import { Effect } from "effect"
import { Tenant } from "../../domain/Tenant.js"
import { Fenced } from "../../errors/StoreError.js"
import type { JournalStore } from "../../services/JournalStore.js"
import * as Sql from "../internal/Sql.js"
import { isKeyedAdmission, lastCaseOf } from "./Build.js"
import type { Hints } from "./Hints.js"
import * as Open from "./Open.js"
import type { Statements } from "./Statements.js"
import type { Writes } from "./Write.js"

export const make = (s: Statements, hints: Hints, writes: Writes): Pick<JournalStore["Type"], "append"> => {
  const { dialect } = s
  const { remember, forget, writing } = hints
  const { writeOnHint, appendWithin } = writes
  const { openRun } = Open.make(s, writes)
  return {
    append: (run, epoch, batch, alongside, options) =>
      Effect.flatMap(Tenant, (tenant) =>
        writing(tenant, run, (alone) =>
          Effect.gen(function* () {
            if (options?.open !== undefined) {
              if (epoch !== 1) return yield* new Fenced({ run, held: epoch, current: 0 })
              const opened = yield* openRun(tenant, run, options.open, batch, alongside, options.guardCancel === true)
              remember(tenant, run, opened)
              return opened
            }
            const guard = options?.guardCancel === true
            const written = appendWithin(tenant, run, epoch, batch, alone, true, guard)
            // pg: a batch that is only records, on a remembered head, is one autocommitted
            // statement; admission keys, outcomes and an alongside need the transaction.
            const once =
              alongside === undefined && batch.every((a) => !(a.kind.kind === "RunSealed" || isKeyedAdmission(a)))
                ? yield* writeOnHint(tenant, run, epoch, batch, lastCaseOf(batch), alone, guard)
                : undefined
            const records =
              once !== undefined
                ? once.map((b) => b.record)
                : // On the transaction connection: the other store's statements join this transaction.
                  yield* dialect.write(alongside === undefined ? written : Effect.tap(written, () => alongside))
            remember(tenant, run, records)
            return records
          }).pipe(Effect.tapError(() => forget(tenant, run))),
        ),
      ).pipe(Sql.orBackend),
  }
}
