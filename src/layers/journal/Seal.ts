/**
 * The journal's `seal` verb: the run frozen at its head with its last batch, the lease released,
 * the outcome indexed and the log position taken in the same commit; pg on a remembered head in
 * one statement, which also drops a wake-up's timer when that rides alongside (`Folds`).
 */
import { Effect } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import type { JournalStore } from "../../services/JournalStore.js"
import { digestParam } from "../internal/Columns.js"
import * as Folds from "../internal/Folds.js"
import * as Sql from "../internal/Sql.js"
import { build, duplicateOf, indexedAs, isKeyedAdmission, lastCaseOf, WRITE_CHUNK } from "./Build.js"
import type { Hints } from "./Hints.js"
import type { Statements } from "./Statements.js"
import type { Writes } from "./Write.js"

export const make = (s: Statements, hints: Hints, writes: Writes): Pick<JournalStore["Type"], "seal"> => {
  const { dialect, notWritten, mustHold, headOf, sealAtOnce, sealRow, releaseHeld, indexOutcome } = s
  const { sealOnHintAtOnce, sealDroppingOnHintAtOnce } = s.writes
  const { forget, writing } = hints
  const { appendWithin } = writes

  /**
   * pg: the seal with its last batch as one statement on the remembered head (`sealOnHintAtOnce`),
   * under the same conditions as `writeOnHint`; the chain head sealed, or `undefined` with nothing
   * written (no hint, a keyed admission to claim, too long a batch, or the head, epoch or seal moved).
   */
  const sealOnHint = (
    tenant: string,
    run: RunId,
    epoch: number,
    outcome: Journal.RunOutcome,
    last: ReadonlyArray<Journal.Append> | undefined,
    alone: boolean,
    drop?: Folds.TimerDrop,
  ) =>
    Effect.gen(function* () {
      const guess = alone ? hints.get(tenant, run) : undefined
      if (guess === undefined || last === undefined || last.length === 0 || last.length > WRITE_CHUNK) return undefined
      if (last.some(isKeyedAdmission)) return undefined
      // As in `writeOnHint`: refusals keep their order, so a batch that cannot be built goes the long way.
      const built = yield* Effect.orElseSucceed(build(run, guess, last), () => undefined)
      const top = built?.[built.length - 1]
      if (built === undefined || top === undefined) return undefined
      if (top === undefined) return undefined
      const params = [
        tenant,
        run,
        guess.seq,
        epoch,
        lastCaseOf(last),
        ...built.flatMap((b) => b.row),
        indexedAs(last, outcome),
        outcome,
        digestParam(top.record.hash),
      ]
      const [row] = yield* (
        drop === undefined
          ? sealOnHintAtOnce(built.length)(...params)
          : sealDroppingOnHintAtOnce(built.length)(...params, drop.effect)
      ).pipe(Sql.catchSql(Sql.isUniqueViolation, duplicateOf(run, last)))
      if (row === undefined) return yield* notWritten(`seal of ${run}`)
      if (row.written === 0 && row.sealed === 0) {
        hints.drop(tenant, run)
        return undefined
      }
      if (
        row.written !== built.length ||
        row.touched !== 1 ||
        row.released !== 1 ||
        row.indexed !== 1 ||
        row.sealed !== 1
      )
        return yield* notWritten(`seal of ${run}`)
      return top.record.hash
    })

  return {
    seal: (run, epoch, outcome, last, alongside, options) =>
      Effect.flatMap(Tenant, (tenant) =>
        writing(tenant, run, (alone) => {
          const guard = options?.guardCancel === true
          const full = Effect.gen(function* () {
            // Same check as append: the head sealed here is the last one any holder wrote. The
            // run's last records ride in the same transaction, so concluding costs one commit.
            // With a last batch its final record is the head, so only a bare seal reads it.
            let head: Journal.Head
            if (last === undefined) {
              // A bare seal carries no boundary: there is nothing for a guard to refuse.
              yield* mustHold(tenant, run, epoch)
              head = yield* headOf(tenant, run)
            } else {
              const records = yield* appendWithin(tenant, run, epoch, last, alone, !dialect.writableCte, guard)
              const top = records[records.length - 1]
              head = top === undefined ? yield* headOf(tenant, run) : { seq: top.seq, hash: top.hash }
            }
            // A conclusion record of the last batch (sqlite indexed it with the batch); the
            // outcome indexed is `indexedAs`'s.
            const concluded = [...(last ?? [])].reverse().find((a) => a.kind.kind === "RunSealed")?.kind
            const indexAs = indexedAs(last, outcome)
            // The lease is released by the seal's own commit (see the contract): pg in the same
            // statement (`sealAtOnce`), sqlite in the same transaction.
            if (dialect.writableCte) {
              const [row] = yield* sealAtOnce(tenant, run, epoch, indexAs, outcome, digestParam(head.hash))
              if (row === undefined) return yield* notWritten(`seal of ${run}`)
              if (row.indexed !== 1) return yield* notWritten(`outcome of ${run}`)
            } else {
              // sqlite: WITH holds SELECTs only; the same writes under the write lock. A
              // conclusion record of the last batch was indexed with it (`appendWithin`).
              const written = yield* Effect.zipLeft(
                sealRow(tenant, run, outcome, head.hash),
                releaseHeld(tenant, run, epoch),
              )
              if (written === 0) return yield* notWritten(`seal of ${run}`)
              if (concluded === undefined) {
                const indexed = yield* indexOutcome(tenant, run, indexAs)
                if (indexed === 0) return yield* notWritten(`outcome of ${run}`)
              }
            }
            if (alongside !== undefined) yield* alongside
            return head.hash
          })
          // pg, on a remembered head: the batch and the seal are one statement, autocommitted
          // unless an alongside must commit with them; else (or when it wrote nothing) the long way.
          // A timer's disarm (a wake-up's release) of this database rides in that statement.
          const form = alongside?.form
          const dropped = form === undefined ? undefined : Folds.asTimerDrop(form.form, dialect.database)
          const drop = dropped?.run === run ? dropped : undefined
          // A guarded seal goes the long way, where the state read under the lock finds a request.
          const hinted = guard ? Effect.succeed(undefined) : sealOnHint(tenant, run, epoch, outcome, last, alone, drop)
          // What follows the hinted statement when it commits on its own: nothing without an
          // alongside, the fold's notice with a folded one; any other alongside needs the transaction.
          const onItsOwn = alongside === undefined ? Effect.void : drop === undefined ? undefined : form?.folded
          const sealed =
            onItsOwn === undefined
              ? dialect.write(
                  Effect.flatMap(hinted, (h) => (h === undefined ? full : Effect.as(alongside ?? Effect.void, h))),
                )
              : Effect.flatMap(hinted, (h) => (h === undefined ? dialect.write(full) : Effect.as(onItsOwn, h)))
          // A sealed run takes no more appends; a failed seal's head is unknown.
          return Effect.ensuring(sealed, forget(tenant, run))
        }),
      ).pipe(Sql.orBackend),
  }
}
