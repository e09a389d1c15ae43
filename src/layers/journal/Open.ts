/**
 * A new run's opening append (`JournalStore.AppendOptions.open`): the lease taken at epoch 1, the
 * admission key claimed and the tenant's halt checked with the first records, and what refused
 * an opening that wrote nothing.
 */
import { Effect } from "effect"
import * as Digest from "../../domain/Digest.js"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import { Halted } from "../../errors/QuotaError.js"
import { CancelPending, DuplicateAdmission, LeaseHeld } from "../../errors/StoreError.js"
import type { Alongside } from "../../services/JournalStore.js"
import { decodeRows } from "../internal/Columns.js"
import { RunRow } from "../internal/JournalRows.js"
import * as Sql from "../internal/Sql.js"
import { build, duplicateOf, lastCaseOf, WRITE_CHUNK, wholeTtl } from "./Build.js"
import type { Statements } from "./Statements.js"
import type { Writes } from "./Write.js"

export const make = (s: Statements, writes: Writes) => {
  const { sql, dialect, notWritten, haltOf, cancelOf, heldLease, takeFreshLease } = s
  const { openStatements } = s.writes
  const { appendWithin } = writes

  /** What refused an opening append's first check: the halt, else (guarded) a cancellation request. */
  const refusedByHalt = (tenant: string, run: RunId) =>
    Effect.gen(function* () {
      const [halt] = yield* haltOf(tenant)
      if (halt !== undefined) return yield* new Halted({ tenant, reason: halt.reason })
      const [request] = yield* cancelOf(tenant, run)
      if (request !== undefined) return yield* new CancelPending({ run, actor: request.actor, reason: request.reason })
      return yield* notWritten("an opening append refused by a halt since lifted")
    })

  const refusedByLease = (tenant: string, run: RunId) =>
    Effect.flatMap(heldLease(tenant, run), ([held]) =>
      Effect.fail(
        held === undefined
          ? notWritten(`lease of ${run}`)
          : new LeaseHeld({
              run,
              owner: held.owner,
              epoch: held.epoch,
              remainingSecs: Math.max(0, held.expires_at - held.now),
            }),
      ),
    )

  /**
   * A new run's opening append (`AppendOptions.open`). pg: one autocommitted statement
   * (`openStatement`) whose counts say what refused it; with an alongside, or a batch longer
   * than one statement takes, and on sqlite: one transaction making the same checks (the halt,
   * the lease, then the records with the admission key's claim, which `appendWithin` makes).
   */
  const openRun = (
    tenant: string,
    run: RunId,
    open: { readonly owner: string; readonly ttlSecs: number },
    batch: ReadonlyArray<Journal.Append>,
    alongside: Alongside | undefined,
    guard: boolean,
  ) =>
    Effect.gen(function* () {
      const ttl = wholeTtl(open.ttlSecs)
      const lastCase = lastCaseOf(batch)
      if (dialect.writableCte && alongside === undefined && batch.length <= WRITE_CHUNK) {
        // Built first, as every append is: an oversized record is refused before anything else.
        const built = yield* build(run, { seq: 0, hash: Digest.ZERO }, batch)
        let key: string | null = null
        for (const a of batch)
          if (a.kind.kind === "RunAdmitted" && a.kind.idempotency_key !== undefined) key = a.kind.idempotency_key
        const statement = openStatements[key === null ? 0 : 1]?.[guard ? 1 : 0] as (typeof openStatements)[0][0]
        const [row] = yield* statement(built.length)(
          tenant,
          run,
          open.owner,
          ttl,
          lastCase,
          ...(key === null ? [] : [key]),
          ...built.flatMap((b) => b.row),
        ).pipe(
          Sql.catchSql(Sql.isUniqueViolation, duplicateOf(run, batch)),
          Sql.catchSql(Sql.isBadNumber, () => Effect.succeed([undefined] as const)),
        )
        // Undone (see `openStatement`): the transaction's checks say why.
        if (row === undefined) return yield* dialect.write(openWithin(tenant, run, open, ttl, batch, alongside, guard))
        if (row.ok === 0) return yield* dialect.write(openWithin(tenant, run, open, ttl, batch, alongside, guard))
        if (row.claimed === 0 && key !== null) {
          // The holder, read (not claimed: a key freed meanwhile must not be taken by a run that
          // wrote nothing); gone already, the transaction's checks decide.
          const [holder] = yield* sql`SELECT run_id FROM run_admission WHERE tenant = ${tenant} AND key = ${key}`.pipe(
            Effect.flatMap(decodeRows(RunRow, "run_admission")),
          )
          if (holder !== undefined) return yield* new DuplicateAdmission({ key, run: holder.run_id })
          return yield* dialect.write(openWithin(tenant, run, open, ttl, batch, alongside, guard))
        }
        if (row.leased === 0) return yield* refusedByLease(tenant, run)
        if (row.written !== built.length || row.touched !== 1) return yield* notWritten(`the opening of ${run}`)
        return built.map((b) => b.record)
      }
      return yield* dialect.write(openWithin(tenant, run, open, ttl, batch, alongside, guard))
    })

  /** `openRun`'s checks and writes inside a transaction the caller opened. */
  const openWithin = (
    tenant: string,
    run: RunId,
    open: { readonly owner: string },
    ttl: number,
    batch: ReadonlyArray<Journal.Append>,
    alongside: Alongside | undefined,
    guard: boolean,
  ) =>
    Effect.gen(function* () {
      if ((yield* haltOf(tenant)).length > 0) return yield* refusedByHalt(tenant, run)
      if (guard && (yield* cancelOf(tenant, run)).length > 0) return yield* refusedByHalt(tenant, run)
      if ((yield* takeFreshLease(tenant, run, open.owner, ttl)) === 0) return yield* refusedByLease(tenant, run)
      const records = yield* appendWithin(tenant, run, 1, batch, false)
      if (alongside !== undefined) yield* alongside
      return records
    })

  return { openRun }
}
