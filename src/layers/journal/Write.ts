/**
 * The journal's write path under an epoch: a batch written on the head this process remembers
 * in one statement (pg), or on the state read under the lease row's lock, with the admission
 * keys and outcomes the batch claims; `append` and `seal` both write through it.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import * as Digest from "../../domain/Digest.js"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import {
  type Backend,
  CancelPending,
  type Corrupt,
  type DuplicateEffect,
  Fenced,
  type RecordTooLarge,
  RunSealed,
} from "../../errors/StoreError.js"
import { type Built, digestAt } from "../internal/JournalRows.js"
import * as Sql from "../internal/Sql.js"
import { build, duplicateOf, lastCaseOf, WRITE_CHUNK } from "./Build.js"
import type { Hints } from "./Hints.js"
import type { Statements } from "./Statements.js"

/** The write path of one journal store (see the module comment). */
export type Writes = ReturnType<typeof make>

export const make = (s: Statements, hints: Hints) => {
  const { dialect, notWritten, stateOf, cancelOf, sealOf, headOf, insertRecord, touchActivity, indexOutcome, admit } = s
  const { writeAtOnce, writeGuardedAtOnce } = s.writes

  /**
   * pg: one batch statement of `built` from its record `at`, on a head at `seq`; whole when it
   * wrote every record of the chunk and touched the activity row. A batch longer than
   * WRITE_CHUNK goes in statements of that many records, each checking the head the one before
   * it left (see WRITE_CHUNK).
   */
  const writeChunk = (
    tenant: string,
    run: RunId,
    epoch: number,
    lastCase: string | null,
    batch: ReadonlyArray<Journal.Append>,
    built: ReadonlyArray<Built>,
    at: number,
    seq: number,
    guard = false,
  ) => {
    const chunk = built.slice(at, at + WRITE_CHUNK)
    // Only the first chunk carries the guard: the rest follow rows this append just wrote.
    const statement = guard && at === 0 ? writeGuardedAtOnce : writeAtOnce
    return Effect.map(
      statement(chunk.length)(tenant, run, seq, epoch, lastCase, ...chunk.flatMap((b) => b.row)).pipe(
        Sql.catchSql(Sql.isUniqueViolation, duplicateOf(run, batch)),
      ),
      ([written]) => ({
        written,
        whole: written !== undefined && written.written === chunk.length && written.touched === 1,
      }),
    )
  }

  /**
   * pg: `batch` written on the head this process last saw for the run (`hints`), in one
   * statement with no state read before it; `undefined`, with nothing written, when there is no
   * such head, another append or seal of the run is under way here (`alone` false: two writes
   * of one epoch could both pass the statement's snapshot check), the batch needs more than one
   * statement, or the head, the epoch or the seal moved (then the caller reads the state, and
   * reports Fenced or RunSealed, or rebuilds on the head).
   */
  const writeOnHint = (
    tenant: string,
    run: RunId,
    epoch: number,
    batch: ReadonlyArray<Journal.Append>,
    lastCase: string | null,
    alone: boolean,
    guard = false,
  ): Effect.Effect<ReadonlyArray<Built> | undefined, SqlError | Backend | Corrupt | RecordTooLarge | DuplicateEffect> =>
    Effect.gen(function* () {
      const guess = alone ? hints.get(tenant, run) : undefined
      if (guess === undefined || batch.length === 0 || batch.length > WRITE_CHUNK) return undefined
      // A batch that cannot be built (an oversized record) goes the long way, which refuses it
      // only after the seal and the epoch: a sealed run is RunSealed whatever its batch holds.
      const built = yield* Effect.orElseSucceed(build(run, guess, batch), () => undefined)
      if (built === undefined) return undefined
      const { written, whole } = yield* writeChunk(tenant, run, epoch, lastCase, batch, built, 0, guess.seq, guard)
      if (whole) return built
      if (written !== undefined && written.written !== 0) return yield* notWritten(`a batch of ${run}`)
      hints.drop(tenant, run)
      return undefined
    })

  /** Append's checks and writes on the locked state: the run's lease row read (pg `FOR UPDATE`) with its seal and head, then the batch. */
  const writeOnState = (
    tenant: string,
    run: RunId,
    epoch: number,
    batch: ReadonlyArray<Journal.Append>,
    lastCase: string | null,
    guard = false,
  ) =>
    Effect.gen(function* () {
      const [state] = yield* stateOf(tenant, run)
      if (state === undefined) return yield* notWritten(`state of ${run}`)
      if (state.sealed !== null) return yield* new RunSealed({ run, outcome: state.sealed })
      if (state.epoch === null || state.epoch !== epoch)
        return yield* new Fenced({ run, held: epoch, current: state.epoch ?? 0 })
      if (guard) {
        // A request stored after this read is one that came after the boundary: honoured at the next.
        const [request] = yield* cancelOf(tenant, run)
        if (request !== undefined)
          return yield* new CancelPending({ run, actor: request.actor, reason: request.reason })
      }
      // The run's own chain, never a global sequence: seq continues from this head.
      let head: Journal.Head =
        state.head_seq === null || state.head_hash === null
          ? { seq: 0, hash: Digest.ZERO }
          : { seq: state.head_seq, hash: yield* digestAt(state.head_hash, state.head_seq, "hash") }
      let built = yield* build(run, head, batch)
      if (dialect.writableCte && built.length > 0) {
        for (;;) {
          const { written, whole } = yield* writeChunk(tenant, run, epoch, lastCase, batch, built, 0, head.seq)
          if (whole) {
            // The first chunk found the head it was built on; the rest follow our own rows.
            for (let at = WRITE_CHUNK; at < built.length; at += WRITE_CHUNK) {
              if (!(yield* writeChunk(tenant, run, epoch, lastCase, batch, built, at, head.seq + at)).whole)
                return yield* notWritten(`a batch of ${run}`)
            }
            return built
          }
          if (written !== undefined && written.written !== 0) return yield* notWritten(`a batch of ${run}`)
          // Another holder's append or seal committed while we waited for the lock: read again,
          // now that we hold it, and rebuild the batch on what is there.
          const [sealed] = yield* sealOf(tenant, run)
          if (sealed !== undefined) return yield* new RunSealed({ run, outcome: sealed.outcome })
          const fresh = yield* headOf(tenant, run)
          if (fresh.seq === head.seq) return yield* notWritten(`a batch of ${run}`)
          head = fresh
          built = yield* build(run, head, batch)
        }
      }
      // sqlite, and pg's empty batch (it only touches the activity row): one statement a record.
      // sqlite holds the write lock since BEGIN IMMEDIATE, so the state read is current.
      for (const [i, b] of built.entries()) {
        const written = yield* insertRecord(tenant, run, b.row[0], epoch, ...b.row.slice(1)).pipe(
          Sql.catchSql(Sql.isUniqueViolation, duplicateOf(run, batch.slice(i, i + 1))),
        )
        if (written === 0) return yield* notWritten(`record ${run}/${b.record.seq}`)
      }
      if ((yield* touchActivity(tenant, run, lastCase)) === 0) return yield* notWritten(`activity of ${run}`)
      return built
    })

  /** Append's checks and writes, inside a transaction the caller opened: `append` alone, or `seal` with its last batch. */
  /** `indexOutcomes: false` leaves a `RunSealed` record's `run_outcome` row to the caller (pg's seal writes it in its own statement). */
  const appendWithin = (
    tenant: string,
    run: RunId,
    epoch: number,
    batch: ReadonlyArray<Journal.Append>,
    alone: boolean,
    indexOutcomes = true,
    guard = false,
  ) =>
    Effect.gen(function* () {
      const lastCase = lastCaseOf(batch)
      const built =
        (yield* writeOnHint(tenant, run, epoch, batch, lastCase, alone, guard)) ??
        (yield* writeOnState(tenant, run, epoch, batch, lastCase, guard))
      for (const entry of batch) {
        if (entry.kind.kind === "RunAdmitted" && entry.kind.idempotency_key !== undefined) {
          yield* admit(tenant, run, entry.kind.idempotency_key)
        }
        if (indexOutcomes && entry.kind.kind === "RunSealed") {
          // Last conclusion wins: a failed run concluded again by a resume moves to its new outcome.
          const concluded = yield* indexOutcome(tenant, run, entry.kind.outcome)
          if (concluded === 0) return yield* notWritten(`outcome of ${run}`)
        }
      }
      return built.map((b) => b.record)
    })

  return { writeChunk, writeOnHint, appendWithin }
}
