/**
 * The journal store's shared footing: the client, the dialect, every statement the verbs send
 * (each compiled once when the store is built) and the small reads and checks more than one flow
 * makes (the lease row locked, the seal, the head, a seal row, an admission key's claim).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import * as Digest from "../../domain/Digest.js"
import type { RunId } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { Backend, Corrupt, DuplicateAdmission, Fenced, RunSealed } from "../../errors/StoreError.js"
import { decodeRows, digestParam } from "../internal/Columns.js"
import * as Dialect from "../internal/Dialect.js"
import {
  CancelRow,
  digestAt,
  EpochRow,
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
} from "../internal/JournalRows.js"
import * as JournalWrites from "../internal/JournalWrites.js"
import * as LogSequence from "../internal/LogSequence.js"
import * as Sql from "../internal/Sql.js"
import { DECISION_ROWS } from "../internal/ViewRecords.js"

/** The statements and shared checks of one journal store (see the module comment). */
export type Statements = Effect.Effect.Success<typeof make>

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make
  // Lease, activity, admission and cancellation times are the backend's, in whole seconds.
  const now = sql.literal(dialect.now)

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
   * The view's first read (`ViewRecords`): the decision records through `journal_decisions` and
   * the last record through the primary key, unordered (`ViewRecords.decisions` orders them): an
   * ORDER BY would have SQLite take each branch in seq order off the primary key. Parameters:
   * tenant, run.
   */
  const viewFirst = dialect.query(JournalRow, "journal", { named: true })`
    SELECT ${RECORD_COLUMNS} FROM journal WHERE tenant = ${0} AND run_id = ${1} AND ${DECISION_ROWS(dialect.name)}
    UNION ALL
    SELECT * FROM (SELECT ${RECORD_COLUMNS} FROM journal WHERE tenant = ${0} AND run_id = ${1}
                    ORDER BY seq DESC LIMIT 1) AS last_record`

  /**
   * The view's second read: the announcements under `n` effect keys, through
   * `journal_effect_started`, and those after an undecided approval's Note (a seq past every
   * record when there is none). The keys are listed, not a subquery: pg estimates the decision
   * records by the partial index's predicate, far above what it holds, and hashed every
   * announcement of the run against them. Parameters: tenant, run, seq, then the keys.
   */
  const viewAnnounced = Dialect.perCount((n: number) =>
    dialect.query(JournalRow, "journal", { named: true })(
      ...Dialect.parts([
        `SELECT ${RECORD_COLUMNS} FROM journal WHERE tenant = `,
        0,
        " AND run_id = ",
        1,
        " AND kind = 'EffectStarted' AND effect_key IN (",
        ...(n === 0 ? ["NULL"] : Array.from({ length: n }, (_, i) => (i === 0 ? [3] : [", ", 3 + i])).flat()),
        `) UNION ALL SELECT ${RECORD_COLUMNS} FROM journal WHERE tenant = `,
        0,
        " AND run_id = ",
        1,
        " AND seq > ",
        2,
        " AND kind = 'EffectStarted'",
      ]),
    ),
  )

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
   * ordinal is the dialect's for the pair (`Dialect.outcomeOrdinal`); compiled once, like the
   * records it is written with, instead of built per seal through the client.
   */
  const indexOutcome = dialect.command({ named: true })(
    ...Dialect.parts([
      "INSERT INTO run_outcome (tenant, run_id, outcome, ordinal) VALUES (",
      0,
      ", ",
      1,
      ", ",
      2,
      ", ",
      ...dialect.outcomeOrdinal(0, 2),
      ") ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal RETURNING run_id",
    ]),
  )

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

  /** The halt that refused an opening append. Parameters: tenant. */
  const haltOf = dialect.query(ReasonRow, "quota_halted", { named: true })`
    SELECT reason FROM quota_halted WHERE tenant = ${0}`

  /** A new run's lease at epoch 1, only if the run has none. Parameters: tenant, run, owner, ttl. */
  const takeFreshLease = dialect.command({ named: true })`
    INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at)
    VALUES (${0}, ${1}, ${2}, 1, ${dialect.now} + ${3})
    ON CONFLICT (tenant, run_id) DO NOTHING
    RETURNING run_id`

  // The key claim of a keyed admission; a claimed key fails the whole batch, so it claims nothing.
  const admit = (tenant: string, run: RunId, key: string) =>
    Effect.gen(function* () {
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

  return {
    sql,
    dialect,
    now,
    writes: JournalWrites.make(dialect),
    notWritten,
    lockLease,
    sealOf,
    headOf,
    leaseOf,
    mustHold,
    stateOf,
    readFrom,
    viewFirst,
    viewAnnounced,
    sealAtOnce,
    insertRecord,
    indexOutcome,
    sealRow,
    releaseHeld,
    takeLease,
    heldLease,
    renewLease,
    cancelOf,
    touchActivity,
    haltOf,
    takeFreshLease,
    admit,
  }
})
