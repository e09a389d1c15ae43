/**
 * JournalStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Append and seal
 * take the run's lease row first (pg `FOR UPDATE`; sqlite already holds the write lock), so
 * fencing, sealing and chaining are decided against one state; every other statement is one
 * text for both dialects.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Layer, Option, Schema } from "effect"
import * as Digest from "../domain/Digest.js"
import { type RunId, Seq } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { Tenant } from "../domain/Tenant.js"
import { Halted } from "../errors/QuotaError.js"
import {
  Backend,
  CancelPending,
  Corrupt,
  DuplicateAdmission,
  DuplicateEffect,
  Fenced,
  LeaseHeld,
  LeaseNotHeld,
  RecordRefused,
  RecordTooLarge,
  RunSealed,
} from "../errors/StoreError.js"
import { type Alongside, formOf, JournalStore } from "../services/JournalStore.js"
import { decodeRows, digestParam } from "./internal/Columns.js"
import * as Folds from "./internal/Folds.js"
import {
  ActivityRow,
  type Built,
  CancelRow,
  corruptAt,
  digestAt,
  EpochRow,
  GrantedRow,
  HeadRow,
  HeldRow,
  JournalRow,
  LeaseRow,
  PositionRow,
  RECORD_COLUMNS,
  ReasonRow,
  RunRow,
  SealedRow,
  SealRow,
  StateRow,
  toRecord,
  toRecords,
} from "./internal/JournalRows.js"
import * as JournalWrites from "./internal/JournalWrites.js"
import * as LogSequence from "./internal/LogSequence.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make
  // Lease, activity, admission and cancellation times are the backend's, in whole seconds.
  const now = sql.literal(dialect.now)
  // sqlite: Dialect's `MAX + 1` over the whole table has no index leading with `ordinal`, so
  // every seal scanned every run ever concluded and the wake-up bench fell from 215/s at 1,000
  // due to under 40/s at 10,000. The ordinal only orders `runsByOutcome`, which lists one
  // (tenant, outcome), so it is that pair's `MAX + 1` through `run_outcome_recent`, still under
  // the write lock that makes `MAX + 1` safe: still the most recent conclusion first, and a run
  // concluded again moves to the head of its new outcome. pg keeps its sequence.
  const nextOrdinal = (tenant: string, outcome: string) =>
    dialect.name === "pg"
      ? sql.literal(dialect.nextOrdinal)
      : sql`(SELECT COALESCE(MAX(ordinal), 0) + 1 FROM run_outcome WHERE tenant = ${tenant} AND outcome = ${outcome})`

  // Read inside `write`: on pg the row lock makes an acquire or a seal wait until this verb ends.
  const lockLease = (tenant: string, run: RunId) =>
    sql`SELECT epoch FROM run_lease WHERE tenant = ${tenant} AND run_id = ${run}
        ${sql.literal(dialect.forUpdate)}`.pipe(Effect.flatMap(decodeRows(EpochRow, "run_lease")))

  const sealOf = (tenant: string, run: RunId) =>
    sql`SELECT outcome FROM run_seal WHERE tenant = ${tenant} AND run_id = ${run}`.pipe(
      Effect.flatMap(decodeRows(SealRow, "run_seal")),
    )

  const headOf = (tenant: string, run: RunId) =>
    sql`SELECT seq, hash FROM journal WHERE tenant = ${tenant} AND run_id = ${run}
         ORDER BY seq DESC LIMIT 1`.pipe(
      Effect.flatMap(decodeRows(HeadRow, "journal")),
      Effect.flatMap(([row]) =>
        row === undefined
          ? Effect.succeed<Journal.Head>({ seq: 0, hash: Digest.ZERO })
          : Effect.map(digestAt(row.hash, row.seq, "hash"), (hash): Journal.Head => ({ seq: row.seq, hash })),
      ),
    )

  const leaseOf = (run: RunId, row: LeaseRow) =>
    Schema.decodeUnknown(Journal.Lease)({ run, owner: row.owner, epoch: row.epoch, expiresAt: row.expires_at }).pipe(
      Effect.mapError((e) => new Corrupt({ detail: `run_lease: ${e.message}`, seq: 0 })),
    )

  const notWritten = (what: string) => new Backend({ detail: `${what} was not written` })

  /**
   * pg: the head this process last wrote or read for each run, by `hintKey`, at most HINTS of
   * them. An append built on it is one statement that checks it (`writeOnHint`) instead of a state
   * read and then the statement: a run's next write usually follows its last one here. Only a
   * guess: a head another instance moved, a lapsed epoch or a seal makes that statement write
   * nothing, and the append goes the long way. sqlite reads its state under the write lock
   * anyway and keeps none.
   */
  const hints = new Map<string, Journal.Head>()

  /**
   * What append and seal both require, inside their transaction: the run is not sealed (whatever
   * the epoch) and `epoch` is its current lease epoch. The lease row is locked first, so no
   * acquire or seal slips between this check and the caller's writes.
   */
  const mustHold = (tenant: string, run: RunId, epoch: number) =>
    Effect.gen(function* () {
      const [lease] = yield* lockLease(tenant, run)
      const [sealed] = yield* sealOf(tenant, run)
      if (sealed !== undefined) return yield* new RunSealed({ run, outcome: sealed.outcome })
      if (lease === undefined || lease.epoch !== epoch)
        return yield* new Fenced({ run, held: epoch, current: lease?.epoch ?? 0 })
    })

  /**
   * The lease row locked (pg `FOR UPDATE`), with the seal and the head, in one statement. The
   * epoch is the locked row's latest; pg takes the seal and head from the statement's snapshot,
   * which a wait for the lock leaves behind, so pg's write re-checks them (see `writeAtOnce`).
   */
  const stateOf = dialect.query(StateRow, "run_lease", { named: true })`
    SELECT (SELECT epoch FROM run_lease WHERE tenant = ${0} AND run_id = ${1} ${dialect.forUpdate}) AS epoch,
           (SELECT outcome FROM run_seal WHERE tenant = ${0} AND run_id = ${1}) AS sealed,
           (SELECT seq FROM journal WHERE tenant = ${0} AND run_id = ${1} ORDER BY seq DESC LIMIT 1) AS head_seq,
           (SELECT hash FROM journal WHERE tenant = ${0} AND run_id = ${1} ORDER BY seq DESC LIMIT 1) AS head_hash`

  const readFrom = dialect.query(JournalRow, "journal", { named: true })`
    SELECT ${RECORD_COLUMNS} FROM journal WHERE tenant = ${0} AND run_id = ${1} AND seq >= ${2} ORDER BY seq`

  /**
   * pg: the seal's release, outcome index, log position (`LogSequence`) and seal row in one round
   * trip (the upserts always return their rows). The seal row has no ON CONFLICT: a second seal
   * fails the statement whole, so no position is taken for a seal not written (`mustHold` has
   * refused it as RunSealed before, under the lease row's lock). Parameters: tenant, run, epoch,
   * the outcome indexed, the seal's outcome, the chain head.
   */
  const sealAtOnce = dialect.query(SealedRow, "run_seal", { named: true })`
    WITH released AS (UPDATE run_lease SET owner = '' WHERE tenant = ${0} AND run_id = ${1} AND epoch = ${2} RETURNING run_id),
         indexed AS (INSERT INTO run_outcome (tenant, run_id, outcome, ordinal) VALUES (${0}, ${1}, ${3}, ${dialect.nextOrdinal})
                     ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal
                     RETURNING run_id),
         sequenced AS (INSERT INTO log_sequence (tenant, size) VALUES (${0}, 1) ${LogSequence.NEXT})
    INSERT INTO run_seal (tenant, run_id, outcome, chain_head, log_position, sealed_at)
    VALUES (${0}, ${1}, ${4}, ${5}, (SELECT position FROM sequenced), ${dialect.now})
    RETURNING run_id, (SELECT COUNT(*) FROM indexed) AS indexed`

  const insertRecord = dialect.command({ named: true })`
    INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw)
    VALUES (${0}, ${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9})
    RETURNING seq`

  /**
   * A conclusion's outcome index (last conclusion wins). Parameters: tenant, run, outcome. The
   * ordinal is pg's sequence, sqlite's `MAX + 1` of the pair (see `nextOrdinal`); compiled once,
   * like the records it is written with, instead of built per seal through the client.
   */
  const indexOutcome =
    dialect.name === "pg"
      ? dialect.command({ named: true })`
    INSERT INTO run_outcome (tenant, run_id, outcome, ordinal) VALUES (${0}, ${1}, ${2}, ${dialect.nextOrdinal})
    ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal
    RETURNING run_id`
      : dialect.command({ named: true })`
    INSERT INTO run_outcome (tenant, run_id, outcome, ordinal)
    VALUES (${0}, ${1}, ${2}, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM run_outcome WHERE tenant = ${0} AND outcome = ${2}))
    ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal
    RETURNING run_id`

  /** A seal's log position (`LogSequence`), taken in the seal's transaction (pg's live seal takes it in `sealAtOnce`). Parameters: tenant. */
  const takePosition = dialect.query(PositionRow, "log_sequence", { named: true })`
    INSERT INTO log_sequence (tenant, size) VALUES (${0}, 1) ${LogSequence.NEXT}`

  /**
   * sqlite's seal row (pg's is in `sealAtOnce`), and an import's on both. Parameters: tenant,
   * run, outcome, chain head, log position. No ON CONFLICT: a second seal fails the transaction,
   * which gives the position back.
   */
  const insertSeal = dialect.command({ named: true })`
    INSERT INTO run_seal (tenant, run_id, outcome, chain_head, log_position, sealed_at)
    VALUES (${0}, ${1}, ${2}, ${3}, ${4}, ${dialect.now})
    RETURNING run_id`

  /** A seal row with the tenant's next position, inside the caller's transaction; how many rows were written. */
  const sealRow = (tenant: string, run: RunId, outcome: Journal.RunOutcome, head: Digest.Digest) =>
    Effect.gen(function* () {
      const [taken] = yield* takePosition(tenant)
      if (taken === undefined) return 0
      return yield* insertSeal(tenant, run, outcome, digestParam(head), taken.position)
    })

  /**
   * Gives the lease of `epoch` back; the epoch stays, so the next acquire goes higher. Parameters:
   * tenant, run, epoch. The lease verbs below are compiled once too: a run takes, renews and
   * gives back its lease on every admission, wake-up and suspension.
   */
  const releaseHeld = dialect.command({ named: true })`
    UPDATE run_lease SET owner = '' WHERE tenant = ${0} AND run_id = ${1} AND epoch = ${2} RETURNING run_id`

  /**
   * One upsert settles concurrent acquirers: pg re-checks the WHERE on the row version the winner
   * committed, so only one of them bumps the epoch. Expired is inclusive: live while now <
   * expires_at. Parameters: tenant, run, owner, ttl.
   */
  const takeLease = dialect.query(LeaseRow, "run_lease", { named: true })`
    INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at)
    VALUES (${0}, ${1}, ${2}, 1, ${dialect.now} + ${3})
    ON CONFLICT (tenant, run_id) DO UPDATE
       SET owner = EXCLUDED.owner, epoch = run_lease.epoch + 1, expires_at = EXCLUDED.expires_at
     WHERE run_lease.owner = '' OR run_lease.expires_at <= ${dialect.now}
    RETURNING owner, epoch, expires_at`

  /** The lease that refused an acquire, with the backend's clock. Parameters: tenant, run. */
  const heldLease = dialect.query(HeldRow, "run_lease", { named: true })`
    SELECT owner, epoch, expires_at, ${dialect.now} AS now FROM run_lease WHERE tenant = ${0} AND run_id = ${1}`

  /**
   * Only the exact live holder matches; an expired lease is not renewed, since another may acquire
   * it any moment. Parameters: tenant, run, owner, epoch, ttl.
   */
  const renewLease = dialect.query(LeaseRow, "run_lease", { named: true })`
    UPDATE run_lease SET expires_at = ${dialect.now} + ${4}
     WHERE tenant = ${0} AND run_id = ${1} AND owner = ${2} AND owner <> ''
       AND epoch = ${3} AND expires_at > ${dialect.now}
    RETURNING owner, epoch, expires_at`

  /** A run's cancellation request, read at every step boundary of a live run. Parameters: tenant, run. */
  const cancelOf = dialect.query(CancelRow, "run_cancel", { named: true })`
    SELECT actor, reason FROM run_cancel WHERE tenant = ${0} AND run_id = ${1}`

  // A batch with no case keeps the case the run was last stamped with.
  const touchActivity = dialect.command({ named: true })`
    INSERT INTO run_activity (tenant, run_id, case_id, updated_at)
    VALUES (${0}, ${1}, ${2}, ${dialect.now})
    ON CONFLICT (tenant, run_id) DO UPDATE
       SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id)
    RETURNING run_id`

  const { writeAtOnce, writeGuardedAtOnce, openStatements, sealOnHintAtOnce, sealDroppingOnHintAtOnce } =
    JournalWrites.make(dialect)

  /** The records `batch` makes on top of `head`, with the row each is written as. */
  const build = (
    run: RunId,
    head: Journal.Head,
    batch: ReadonlyArray<Journal.Append>,
  ): Effect.Effect<ReadonlyArray<Built>, RecordTooLarge | Corrupt> => {
    const built: Array<Built> = []
    let prev = digestParam(head.hash)
    for (const entry of batch) {
      const seq = Seq.make(head.seq + 1)
      const encoded = Journal.encoded(entry, run, seq)
      const raw = encoded.raw
      if (raw.length > Journal.MAX_RECORD_BYTES)
        return Effect.fail(new RecordTooLarge({ bytes: raw.length, limit: Journal.MAX_RECORD_BYTES }))
      const hash = Journal.chained(encoded, head.hash)
      // Decoded back from the text just written, so append returns exactly what `read` will
      // (a payload the encoding changes, an undefined field say, reads back as stored), unless
      // the encoding knows the payload is its own encoding.
      const kind = encoded.kind !== undefined ? Either.right(encoded.kind) : Journal.parseKindText(encoded.text)
      if (Either.isLeft(kind)) return Effect.fail(corruptAt(seq, kind.left))
      const record = new Journal.Record(
        {
          run,
          seq,
          case: entry.case,
          step: entry.step,
          phase: entry.phase,
          effectKey: entry.effectKey,
          kind: kind.right,
          prevHash: head.hash,
          hash,
          attestation: Option.none(),
          raw,
        },
        true,
      )
      const param = digestParam(hash)
      const row = [
        seq,
        entry.kind.kind,
        Option.getOrNull(entry.effectKey),
        Option.getOrNull(entry.case),
        prev,
        param,
        raw,
      ]
      built.push({ record, row })
      head = { seq, hash }
      prev = param
    }
    return Effect.succeed(built)
  }

  /** The partial unique index `journal_effect_started` is the exactly-once arbiter: which start it refused. */
  const duplicateOf =
    (run: RunId, batch: ReadonlyArray<Journal.Append>) =>
    (e: SqlError): Effect.Effect<never, DuplicateEffect | SqlError> => {
      const starts = batch.flatMap((a) =>
        a.kind.kind === "EffectStarted" && Option.isSome(a.effectKey) ? [a.effectKey.value] : [],
      )
      // pg names the refused key in the error's detail; with one start in the batch it is that one.
      const detail = String((e.cause as { detail?: unknown } | undefined)?.detail ?? "")
      const effect = starts.find((k) => detail.includes(k)) ?? (starts.length === 1 ? starts[0] : undefined)
      return effect === undefined ? Effect.fail(e) : Effect.fail(new DuplicateEffect({ run, effect }))
    }

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
      const guess = alone ? hints.get(hintKey(tenant, run)) : undefined
      if (guess === undefined || batch.length === 0 || batch.length > WRITE_CHUNK) return undefined
      // A batch that cannot be built (an oversized record) goes the long way, which refuses it
      // only after the seal and the epoch: a sealed run is RunSealed whatever its batch holds.
      const built = yield* Effect.orElseSucceed(build(run, guess, batch), () => undefined)
      if (built === undefined) return undefined
      const { written, whole } = yield* writeChunk(tenant, run, epoch, lastCase, batch, built, 0, guess.seq, guard)
      if (whole) return built
      if (written !== undefined && written.written !== 0) return yield* notWritten(`a batch of ${run}`)
      hints.delete(hintKey(tenant, run))
      return undefined
    })

  /** The head after `records`, remembered for the run's next write (pg); an empty list leaves the hint as it is. */
  const remember = (tenant: string, run: RunId, records: ReadonlyArray<Journal.Record>) => {
    const top = records[records.length - 1]
    if (!dialect.writableCte || top === undefined) return
    const key = hintKey(tenant, run)
    hints.delete(key)
    if (hints.size >= HINTS) {
      // The oldest remembered run goes first (a Map iterates in insertion order).
      const oldest = hints.keys().next()
      if (oldest.done !== true) hints.delete(oldest.value)
    }
    hints.set(key, { seq: top.seq, hash: top.hash })
  }

  const forget = (tenant: string, run: RunId) => Effect.sync(() => hints.delete(hintKey(tenant, run)))

  /** pg: appends and seals of each run under way in this process, by `hintKey`. */
  const underWay = new Map<string, number>()

  /** `use` counted as under way for the run; `alone` when nothing else of the run is (pg; sqlite: always false, it keeps no hints). */
  const writing = <A, E, R>(tenant: string, run: RunId, use: (alone: boolean) => Effect.Effect<A, E, R>) =>
    dialect.writableCte
      ? Effect.acquireUseRelease(
          Effect.sync(() => {
            const key = hintKey(tenant, run)
            const n = underWay.get(key) ?? 0
            underWay.set(key, n + 1)
            return { key, alone: n === 0 }
          }),
          ({ alone }) => use(alone),
          ({ key }) =>
            Effect.sync(() => {
              const n = (underWay.get(key) ?? 1) - 1
              if (n <= 0) underWay.delete(key)
              else underWay.set(key, n)
            }),
        )
      : use(false)

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
      const guess = alone ? hints.get(hintKey(tenant, run)) : undefined
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
        hints.delete(hintKey(tenant, run))
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

  /**
   * A verbatim import (§9.3) inside the caller's transaction. Nothing is locked: the runs are new
   * to this tenant, and a concurrent import or append of the same run meets the primary key, which
   * refuses the whole batch. Rows go in multi-row inserts, since a restore writes millions.
   */
  const importWithin = (
    tenant: string,
    records: ReadonlyArray<Journal.Verbatim>,
    seals: ReadonlyArray<Journal.ImportSeal>,
  ) =>
    Effect.gen(function* () {
      const heads = new Map<RunId, Journal.Head>()
      const stamped = new Map<RunId, string | null>()
      const rows: Array<globalThis.Record<string, unknown>> = []
      const admissions: Array<{ readonly key: string; readonly record: Journal.Verbatim }> = []
      const concluded: Array<{ readonly run: RunId; readonly outcome: Journal.RunOutcome }> = []
      for (const record of records) {
        const refuse = (detail: string) => new RecordRefused({ run: record.run, seq: record.seq, detail })
        let head = heads.get(record.run)
        if (head === undefined) {
          const [sealed] = yield* sealOf(tenant, record.run)
          if (sealed !== undefined) return yield* refuse(`the run is sealed (${sealed.outcome})`)
          head = yield* headOf(tenant, record.run)
        }
        const checked = Journal.checkVerbatim(record, head)
        if (Either.isLeft(checked)) return yield* refuse(checked.left)
        const body = checked.right
        const attestation = Option.getOrNull(record.attestation)
        rows.push({
          tenant,
          run_id: record.run,
          seq: record.seq,
          // The writer's epoch is not exported; 1 is the first any lease could have had.
          epoch: 1,
          kind: body.kind.kind,
          effect_key: Option.getOrNull(body.effectKey),
          case_id: Option.getOrNull(body.case),
          prev_hash: digestParam(record.prevHash),
          hash: digestParam(record.hash),
          raw: Buffer.from(record.raw),
          key_id: attestation?.keyId ?? null,
          signature: attestation?.signature ?? null,
        })
        heads.set(record.run, { seq: record.seq, hash: record.hash })
        if (Option.isSome(body.case) || !stamped.has(record.run)) stamped.set(record.run, Option.getOrNull(body.case))
        if (body.kind.kind === "RunAdmitted" && body.kind.idempotency_key !== undefined)
          admissions.push({ key: body.kind.idempotency_key, record })
        if (body.kind.kind === "RunSealed") concluded.push({ run: record.run, outcome: body.kind.outcome })
      }
      for (let i = 0; i < rows.length; i += IMPORT_CHUNK) {
        const chunk = rows.slice(i, i + IMPORT_CHUNK)
        const first = records[i]
        const written = yield* sql`INSERT INTO journal ${sql.insert(chunk)} RETURNING seq`.pipe(
          // The primary key and `journal_effect_started` refuse a record already stored or a repeated start.
          Sql.catchSql(Sql.isUniqueViolation, () =>
            Effect.fail(
              new RecordRefused({
                run: first?.run ?? "",
                seq: first?.seq ?? 0,
                detail: "a record of this batch is already stored, or repeats an effect start",
              }),
            ),
          ),
        )
        if (written.length !== chunk.length) return yield* notWritten(`records from ${first?.run}/${first?.seq}`)
      }
      for (const { key, record } of admissions) {
        const claimed = yield* sql`
          INSERT INTO run_admission (tenant, key, run_id, admitted_at) VALUES (${tenant}, ${key}, ${record.run}, ${now})
          ON CONFLICT (tenant, key) DO NOTHING
          RETURNING run_id`
        if (claimed.length === 0)
          return yield* new RecordRefused({
            run: record.run,
            seq: record.seq,
            detail: `admission key ${JSON.stringify(key)} is held by another run`,
          })
      }
      // In import order: a restore concludes runs in run id order, so that is the order runsByOutcome shows.
      for (const { run, outcome } of concluded) {
        const done = yield* sql`
          INSERT INTO run_outcome (tenant, run_id, outcome, ordinal)
          VALUES (${tenant}, ${run}, ${outcome}, ${nextOrdinal(tenant, outcome)})
          ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal
          RETURNING run_id`
        if (done.length === 0) return yield* notWritten(`outcome of ${run}`)
      }
      for (const [run, kase] of stamped) {
        const touched = yield* sql`
          INSERT INTO run_activity (tenant, run_id, case_id, updated_at)
          VALUES (${tenant}, ${run}, ${kase}, ${now})
          ON CONFLICT (tenant, run_id) DO UPDATE
             SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id)
          RETURNING run_id`
        if (touched.length === 0) return yield* notWritten(`activity of ${run}`)
      }
      const sealing = new Set<RunId>()
      for (const seal of seals) {
        if (sealing.has(seal.run))
          return yield* new RecordRefused({ run: seal.run, seq: 0, detail: "a seal must name a run once" })
        sealing.add(seal.run)
        // A run this call writes seals at the head it wrote; another at its stored head (none: a bare seal at ZERO).
        let head = heads.get(seal.run)
        if (head === undefined) {
          const [sealed] = yield* sealOf(tenant, seal.run)
          if (sealed !== undefined)
            return yield* new RecordRefused({ run: seal.run, seq: 0, detail: `the run is sealed (${sealed.outcome})` })
          head = yield* headOf(tenant, seal.run)
        }
        const sealed = yield* sealRow(tenant, seal.run, seal.outcome, head.hash)
        if (sealed === 0) return yield* notWritten(`seal of ${seal.run}`)
        // A seal without a conclusion record in this call (the sweeper's bare evidence runs, a run
        // written by an earlier call) indexes its outcome as `seal` does live: runsByOutcome then
        // follows the order of the seals.
        if (!concluded.some((c) => c.run === seal.run)) {
          const indexed = yield* sql`
            INSERT INTO run_outcome (tenant, run_id, outcome, ordinal)
            VALUES (${tenant}, ${seal.run}, ${seal.outcome}, ${nextOrdinal(tenant, seal.outcome)})
            ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal
            RETURNING run_id`
          if (indexed.length === 0) return yield* notWritten(`outcome of ${seal.run}`)
        }
      }
      return records.length
    })

  /** The halt that refused an opening append. Parameters: tenant. */
  const haltOf = dialect.query(ReasonRow, "quota_halted", { named: true })`
    SELECT reason FROM quota_halted WHERE tenant = ${0}`

  /** A new run's lease at epoch 1, only if the run has none. Parameters: tenant, run, owner, ttl. */
  const takeFreshLease = dialect.command({ named: true })`
    INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at)
    VALUES (${0}, ${1}, ${2}, 1, ${dialect.now} + ${3})
    ON CONFLICT (tenant, run_id) DO NOTHING
    RETURNING run_id`

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

  return JournalStore.of({
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

    acquire: (run, owner, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const ttl = wholeTtl(ttlSecs)
        return yield* dialect.write(
          Effect.gen(function* () {
            const [row] = yield* takeLease(tenant, run, owner, ttl)
            if (row !== undefined) return yield* leaseOf(run, row)
            // The upsert left the row locked (pg), so this reads the lease that refused us.
            const [held] = yield* heldLease(tenant, run)
            if (held === undefined) return yield* notWritten(`lease of ${run}`)
            return yield* new LeaseHeld({
              run,
              owner: held.owner,
              epoch: held.epoch,
              remainingSecs: Math.max(0, held.expires_at - held.now),
            })
          }),
        )
      }).pipe(Sql.orBackend),

    acquireMany: (runs, owner, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const ttl = wholeTtl(ttlSecs)
        // Sorted and distinct: a row named twice would be upserted twice in one statement (pg
        // refuses that), and on pg two callers with overlapping sets lock the rows they share in
        // the same order, so neither waits on a row the other will only reach after it.
        const distinct = [...new Set(runs)].sort()
        if (distinct.length === 0) return []
        const granted: Array<Journal.Lease> = []
        for (let i = 0; i < distinct.length; i += ACQUIRE_CHUNK) {
          const chunk = distinct.slice(i, i + ACQUIRE_CHUNK)
          // The upsert of `acquire`, one row per run: each conflicting row's WHERE is re-checked
          // on the version a concurrent winner committed, so each run is granted once.
          const rows = yield* sql`
            INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at)
            VALUES ${sql.join(",", false)(chunk.map((run) => sql`(${tenant}, ${run}, ${owner}, 1, ${now} + ${ttl})`))}
            ON CONFLICT (tenant, run_id) DO UPDATE
               SET owner = EXCLUDED.owner, epoch = run_lease.epoch + 1, expires_at = EXCLUDED.expires_at
             WHERE run_lease.owner = '' OR run_lease.expires_at <= ${now}
            RETURNING run_id, owner, epoch, expires_at`.pipe(Effect.flatMap(decodeRows(GrantedRow, "run_lease")))
          for (const row of rows) granted.push(yield* leaseOf(row.run_id, row))
        }
        return granted
      }).pipe(Sql.orBackend),

    renew: (run, owner, epoch, ttlSecs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const [row] = yield* renewLease(tenant, run, owner, epoch, wholeTtl(ttlSecs))
        if (row === undefined) return yield* new LeaseNotHeld({ run, epoch })
        return yield* leaseOf(run, row)
      }).pipe(Sql.orBackend),

    releaseLease: (run, epoch) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // A stale epoch or a repeat matches no row, which the contract makes a silent success, so
        // the count is not an error here.
        yield* releaseHeld(tenant, run, epoch)
      }).pipe(Sql.orBackend),

    abandonedRuns: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT run_id FROM run_lease
           WHERE tenant = ${tenant} AND owner <> '' AND expires_at <= ${now}
           ORDER BY expires_at, run_id LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_lease")),
        )
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),

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
          const form = alongside === undefined ? undefined : formOf(alongside)
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

    read: (run, from) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const records = yield* toRecords(yield* readFrom(tenant, run, Math.floor(from)))
        // The last record read is the head a resume of the run writes on next.
        remember(tenant, run, records)
        return records
      }).pipe(Sql.orBackend),

    head: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* headOf(tenant, run)
      }).pipe(Sql.orBackend),

    runsByOutcome: (outcome, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT run_id FROM run_outcome WHERE tenant = ${tenant} AND outcome = ${outcome}
           ORDER BY ordinal DESC, run_id DESC LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_outcome")),
        )
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),

    admittedAs: (key) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`SELECT run_id FROM run_admission WHERE tenant = ${tenant} AND key = ${key}`.pipe(
          Effect.flatMap(decodeRows(RunRow, "run_admission")),
        )
        return Option.map(Option.fromNullable(rows[0]), (r) => r.run_id)
      }).pipe(Sql.orBackend),

    forgetAdmissions: (olderThan) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Inclusive: a key admitted exactly at `olderThan` is freed.
        const freed = yield* sql`
          DELETE FROM run_admission WHERE tenant = ${tenant} AND admitted_at <= ${olderThan}
          RETURNING key`
        return freed.length
      }).pipe(Sql.orBackend),

    recentRuns: (after, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Strictly after the cursor in (updated_at desc, run desc): the order is total, so pages neither overlap nor skip.
        const rows = yield* sql`
          SELECT run_id, updated_at, case_id FROM run_activity
           WHERE tenant = ${tenant}
           ${Option.match(after, {
             onNone: () => sql.literal(""),
             onSome: (c) =>
               sql`AND (updated_at < ${c.updatedAt} OR (updated_at = ${c.updatedAt} AND run_id < ${c.run}))`,
           })}
           ORDER BY updated_at DESC, run_id DESC LIMIT ${Sql.clampLimit(limit)}`.pipe(
          Effect.flatMap(decodeRows(ActivityRow, "run_activity")),
        )
        return rows.map(
          (r): Journal.RecentRun => ({ run: r.run_id, updatedAt: r.updated_at, case: Option.fromNullable(r.case_id) }),
        )
      }).pipe(Sql.orBackend),

    caseHistory: (kase, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Run ids are time-ordered, so (run, seq) is oldest first.
        const rows = yield* sql`
          SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
           WHERE tenant = ${tenant} AND case_id = ${kase}
           ORDER BY run_id, seq LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(JournalRow, "journal")))
        return yield* toRecords(rows)
      }).pipe(Sql.orBackend),

    requestCancel: (run, actor, reason) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // The first request wins; a later one inserts nothing and reports false.
        const stored = yield* sql`
          INSERT INTO run_cancel (tenant, run_id, actor, reason, requested_at)
          VALUES (${tenant}, ${run}, ${actor}, ${reason}, ${now})
          ON CONFLICT (tenant, run_id) DO NOTHING
          RETURNING run_id`
        return stored.length > 0
      }).pipe(Sql.orBackend),

    cancellation: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* cancelOf(tenant, run)
        return Option.map(
          Option.fromNullable(rows[0]),
          (r): Journal.Cancellation => ({ actor: r.actor, reason: r.reason }),
        )
      }).pipe(Sql.orBackend),

    verify: (run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* dialect.read(
          sql`SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
               WHERE tenant = ${tenant} AND run_id = ${run} ORDER BY seq`.pipe(
            Effect.flatMap(decodeRows(JournalRow, "journal")),
          ),
        )
        let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
        for (const row of rows) {
          const expected = head.seq + 1
          // A gap names the first missing seq, not the row after it.
          if (row.seq !== expected)
            return yield* new Corrupt({ detail: `journal: seq ${expected} is missing`, seq: expected })
          const record = yield* toRecord(row)
          if (record.prevHash !== head.hash)
            return yield* new Corrupt({ detail: "journal: prev_hash does not match the predecessor", seq: row.seq })
          // Recomputed from the stored bytes, never from a re-serialisation of the decoded record.
          if (Digest.chain(head.hash, row.raw) !== record.hash)
            return yield* new Corrupt({ detail: "journal: hash does not match the stored bytes", seq: row.seq })
          head = { seq: row.seq, hash: record.hash }
        }
        return head
      }).pipe(Sql.orBackend),

    runs: (after, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Every append writes the run's activity row in its transaction, so this primary key lists exactly the written runs.
        const rows = yield* sql`
          SELECT run_id FROM run_activity WHERE tenant = ${tenant}
           ${Option.match(after, { onNone: () => sql.literal(""), onSome: (a) => sql`AND run_id > ${a}` })}
           ORDER BY run_id LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(RunRow, "run_activity")))
        return rows.map((r) => r.run_id)
      }).pipe(Sql.orBackend),

    readPage: (run, from, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT ${sql.literal(RECORD_COLUMNS)} FROM journal
           WHERE tenant = ${tenant} AND run_id = ${run} AND seq >= ${Math.floor(from)}
           ORDER BY seq LIMIT ${Sql.clampLimit(limit)}`.pipe(Effect.flatMap(decodeRows(JournalRow, "journal")))
        return yield* toRecords(rows)
      }).pipe(Sql.orBackend),

    importRecords: (records, seals) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* dialect.write(importWithin(tenant, records, seals))
      }).pipe(Sql.orBackend),

    isShared: dialect.name === "pg",
  })

  // The key claim of a keyed admission; a claimed key fails the whole batch, so it claims nothing.
  function admit(tenant: string, run: RunId, key: string) {
    return Effect.gen(function* () {
      // pg: a concurrent claim of the same key waits here for the other transaction, then conflicts.
      const claimed = yield* sql`
        INSERT INTO run_admission (tenant, key, run_id, admitted_at) VALUES (${tenant}, ${key}, ${run}, ${now})
        ON CONFLICT (tenant, key) DO NOTHING
        RETURNING run_id`
      if (claimed.length > 0) return
      const [holder] = yield* sql`SELECT run_id FROM run_admission WHERE tenant = ${tenant} AND key = ${key}`.pipe(
        Effect.flatMap(decodeRows(RunRow, "run_admission")),
      )
      if (holder === undefined) return yield* notWritten(`admission ${key}`)
      return yield* new DuplicateAdmission({ key, run: holder.run_id })
    })
  }
})

/** JournalStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<JournalStore, never, SqlClient.SqlClient> = Layer.effect(JournalStore, make)

// internal

/** Runs whose head `hints` remembers: about 200 bytes each. */
const HINTS = 10_000

const hintKey = (tenant: string, run: RunId) => `${tenant}\u0000${run}`

/** The case the batch stamps the run's activity with: its last record's that names one. */
const lastCaseOf = (batch: ReadonlyArray<Journal.Append>): string | null => {
  for (let i = batch.length - 1; i >= 0; i--) {
    const c = batch[i]?.case
    if (c !== undefined && Option.isSome(c)) return c.value
  }
  return null
}

/**
 * The outcome `runsByOutcome` lists a sealed run under: its last batch's last conclusion record's
 * (the last conclusion wins), else the seal's own, so a bare seal (the sweeper's evidence runs
 * seal `swept` with no record) is listed too.
 */
const indexedAs = (
  last: ReadonlyArray<Journal.Append> | undefined,
  outcome: Journal.RunOutcome,
): Journal.RunOutcome => {
  for (let i = (last?.length ?? 0) - 1; i >= 0; i--) {
    const kind = last?.[i]?.kind
    if (kind?.kind === "RunSealed") return kind.outcome
  }
  return outcome
}

/** A record whose admission key `appendWithin` claims in the same transaction. */
const isKeyedAdmission = (a: Journal.Append) => a.kind.kind === "RunAdmitted" && a.kind.idempotency_key !== undefined

/**
 * pg: records per batch statement. The protocol counts a statement's parameters in 16 bits
 * (65,535), and a record takes 7 besides the statement's 5: a run that staged 10,001 records
 * (the replay bench's longest) sent 70,012, which pg read as 4,476 and refused ("bind message has
 * 4476 parameter formats but 1 parameters"). 1,000 records are 7,005 parameters.
 */
const WRITE_CHUNK = 1000

// Runs per lease upsert of `acquireMany`: 5 parameters each, far under both dialects' limits.
const ACQUIRE_CHUNK = 500

// Rows per multi-row insert of an import: 12 parameters each, far under both dialects' limits.
const IMPORT_CHUNK = 200

// TTLs are whole seconds >= 1; a fractional or smaller one is taken as the nearest whole second >= 1.
const wholeTtl = (ttl: number): number => (Number.isFinite(ttl) ? Math.max(1, Math.floor(ttl)) : 1)
