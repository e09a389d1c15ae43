/**
 * pg: the journal's one-statement writes. Each checks what the long way (a transaction that reads
 * the run's state, then writes) would check, inside the statement that writes, so a run's durable
 * point is one round trip; a statement that finds its guard broken writes nothing and answers
 * with counts that say which guard refused, and the store then goes the long way for the error.
 */
import * as Dialect from "./Dialect.js"
import { OpenedRow, SealedWithRow, WrittenRow } from "./JournalRows.js"
import * as LogSequence from "./LogSequence.js"

export const make = (dialect: Dialect.Dialect) => {
  /**
   * pg: a batch's records and the activity touch in one statement, written only if `epoch` is
   * still the run's lease epoch (its row locked here), the run is unsealed and its head is still
   * `head`; otherwise nothing is written. After `stateOf` the lock is already ours. Sent alone,
   * on a remembered head (`writeOnHint`), the statement's snapshot can predate a wait for the
   * lock, and it is still safe: pg re-checks `epoch` on the row version it locked, an epoch is
   * ours only after our acquire committed (and that acquire waited for the row lock of any
   * earlier holder's write), and no other write of our epoch is in flight (`writeOnHint` runs
   * only when this process has no other append or seal of the run under way, and no other
   * process holds our epoch). So whatever the old snapshot misses was written at a later epoch,
   * which the re-check refuses. A batch built on a stale head writes nothing and is rebuilt on
   * the state read (`appendWithin`).
   */
  const writePieces = (n: number, guard = false): ReadonlyArray<string | number> => [
    "WITH ok AS (SELECT 1 AS ok FROM run_lease WHERE tenant = ",
    0,
    " AND run_id = ",
    1,
    " AND epoch = CAST(",
    3,
    " AS BIGINT) AND NOT EXISTS (SELECT 1 FROM run_seal WHERE tenant = ",
    0,
    " AND run_id = ",
    1,
    ") AND COALESCE((SELECT MAX(seq) FROM journal WHERE tenant = ",
    0,
    " AND run_id = ",
    1,
    "), 0) = CAST(",
    2,
    " AS BIGINT)",
    // A guarded batch (`AppendOptions.guardCancel`) writes nothing over a stored request; the
    // long way (`writeOnState`) then reads the request and answers CancelPending.
    ...(guard ? [" AND NOT EXISTS (SELECT 1 FROM run_cancel WHERE tenant = ", 0, " AND run_id = ", 1, ")"] : []),
    " FOR UPDATE), written AS (INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) SELECT ",
    0,
    ", ",
    1,
    ", r.seq, CAST(",
    3,
    " AS BIGINT), r.kind, r.effect_key, r.case_id, r.prev_hash, r.hash, r.raw FROM ok, ",
    ...recordValues(n, 5),
    " RETURNING seq), touched AS (INSERT INTO run_activity (tenant, run_id, case_id, updated_at) SELECT ",
    0,
    ", ",
    1,
    ", ",
    4,
    `, ${dialect.now} FROM ok ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id)`,
  ]

  /** `(VALUES …) AS r (…)`: `n` records of seven parameters each, the first at hole `base`. */
  const recordValues = (n: number, base: number): ReadonlyArray<string | number> => [
    "(VALUES ",
    ...Array.from({ length: n }, (_, i) => {
      const at = base + 7 * i
      return [
        i === 0 ? "(CAST(" : ", (CAST(",
        at,
        " AS BIGINT), ",
        at + 1,
        ", ",
        at + 2,
        ", ",
        at + 3,
        ", CAST(",
        at + 4,
        " AS BYTEA), CAST(",
        at + 5,
        " AS BYTEA), CAST(",
        at + 6,
        " AS BYTEA))",
      ]
    }).flat(),
    ") AS r (seq, kind, effect_key, case_id, prev_hash, hash, raw)",
  ]

  const writeStatement = (n: number, guard: boolean) =>
    dialect.query(WrittenRow, "journal", { named: true })(
      ...Dialect.parts([
        ...writePieces(n, guard),
        " SELECT (SELECT COUNT(*) FROM written) AS written, (SELECT COUNT(*) FROM touched) AS touched",
      ]),
    )
  const writeAtOnce = Dialect.perCount((n: number) => writeStatement(n, false))
  const writeGuardedAtOnce = Dialect.perCount((n: number) => writeStatement(n, true))

  /**
   * pg: a new run's opening append (`AppendOptions.open`) in one statement: the tenant's halt
   * checked, the admission key claimed (`keyed`), the lease taken at epoch 1, the records written
   * at seq 1… and the activity row touched, each only if everything before it held, so a refusal
   * at any of them writes nothing, and the answer's counts say which one refused. A concurrent
   * claim of the same key waits for the other transaction, then conflicts and claims nothing.
   * Parameters: tenant, run, owner, ttl, the case stamped, the admission key (`keyed` only), then
   * seven per record.
   */
  const openStatement = (n: number, keyed: boolean, guard: boolean) =>
    dialect.query(OpenedRow, "journal", { named: true })(
      ...Dialect.parts([
        "WITH ok AS (SELECT 1 AS ok WHERE NOT EXISTS (SELECT 1 FROM quota_halted WHERE tenant = ",
        0,
        ") AND NOT EXISTS (SELECT 1 FROM run_lease WHERE tenant = ",
        0,
        " AND run_id = ",
        1,
        ")",
        // A request stored for a run not yet written: its id was known to whoever asked (its own steps).
        ...(guard ? [" AND NOT EXISTS (SELECT 1 FROM run_cancel WHERE tenant = ", 0, " AND run_id = ", 1, ")"] : []),
        ")",
        ...(keyed
          ? [
              ", claimed AS (INSERT INTO run_admission (tenant, key, run_id, admitted_at) SELECT ",
              0,
              ", ",
              5,
              ", ",
              1,
              `, ${dialect.now} FROM ok ON CONFLICT (tenant, key) DO NOTHING RETURNING run_id)`,
            ]
          : [", claimed AS (SELECT ok FROM ok)"]),
        ", leased AS (INSERT INTO run_lease (tenant, run_id, owner, epoch, expires_at) SELECT ",
        0,
        ", ",
        1,
        ", ",
        2,
        `, 1, ${dialect.now} + CAST(`,
        3,
        " AS BIGINT) FROM claimed ON CONFLICT (tenant, run_id) DO NOTHING RETURNING epoch)",
        ", written AS (INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) SELECT ",
        0,
        ", ",
        1,
        ", r.seq, 1, r.kind, r.effect_key, r.case_id, r.prev_hash, r.hash, r.raw FROM leased, ",
        ...recordValues(n, keyed ? 6 : 5),
        " RETURNING seq), touched AS (INSERT INTO run_activity (tenant, run_id, case_id, updated_at) SELECT ",
        0,
        ", ",
        1,
        ", ",
        4,
        `, ${dialect.now} FROM leased ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id)`,
        " SELECT (SELECT COUNT(*) FROM ok) AS ok, (SELECT COUNT(*) FROM claimed) AS claimed, (SELECT COUNT(*) FROM leased) AS leased, (SELECT COUNT(*) FROM written) AS written, (SELECT COUNT(*) FROM touched) AS touched",
        // A lease taken between the snapshot's check and the insert (by whoever knew the unwritten
        // run's id) leaves a claimed key with no lease: casting the run id to a number then fails
        // the statement, undoing the claim, and the caller goes the long way, which answers LeaseHeld.
        ...(keyed
          ? [", (SELECT CAST(c.run_id AS BIGINT) FROM claimed c WHERE NOT EXISTS (SELECT 1 FROM leased)) AS undone"]
          : []),
      ]),
    )
  const openStatements = [false, true].map((keyed) =>
    [false, true].map((guard) => Dialect.perCount((n: number) => openStatement(n, keyed, guard))),
  )

  /**
   * pg: a seal with its last batch, on a remembered head, in one statement: `writeAtOnce`'s
   * guarded records and activity touch, then what `sealAtOnce` writes (the lease released, the
   * outcome indexed, the log position taken (`LogSequence`), the seal row), each only if the
   * guard passed. Parameters: `writeAtOnce`'s,
   * then the outcome indexed, the seal's outcome and the chain head (the batch's last hash). The
   * seal row has no ON CONFLICT: a seal the guard's snapshot missed fails the statement whole
   * rather than leave the batch written and the run unsealed.
   */
  const sealOnHintAtOnce = Dialect.perCount((n: number) => sealOnHintStatement(n, false))
  /** `sealOnHintAtOnce` that also drops a timer of the run (a folded `TimerStore.disarm`), its effect key the last parameter. */
  const sealDroppingOnHintAtOnce = Dialect.perCount((n: number) => sealOnHintStatement(n, true))
  const sealOnHintStatement = (n: number, drop: boolean) => {
    const at = 5 + 7 * n
    return dialect.query(SealedWithRow, "run_seal", { named: true })(
      ...Dialect.parts([
        ...writePieces(n),
        ", released AS (UPDATE run_lease SET owner = '' WHERE tenant = ",
        0,
        " AND run_id = ",
        1,
        " AND epoch = CAST(",
        3,
        " AS BIGINT) AND EXISTS (SELECT 1 FROM ok) RETURNING run_id), indexed AS (INSERT INTO run_outcome (tenant, run_id, outcome, ordinal) SELECT ",
        0,
        ", ",
        1,
        ", ",
        at,
        `, ${dialect.nextOrdinal} FROM ok ON CONFLICT (tenant, run_id) DO UPDATE SET outcome = EXCLUDED.outcome, ordinal = EXCLUDED.ordinal RETURNING run_id), sequenced AS (INSERT INTO log_sequence (tenant, size) SELECT `,
        0,
        `, 1 FROM ok ${LogSequence.NEXT}), sealed AS (INSERT INTO run_seal (tenant, run_id, outcome, chain_head, log_position, sealed_at) SELECT `,
        0,
        ", ",
        1,
        ", ",
        at + 1,
        ", CAST(",
        at + 2,
        ` AS BYTEA), (SELECT position FROM sequenced), ${dialect.now} FROM ok RETURNING run_id)`,
        // The drop is idempotent (a missing timer is already disarmed), so its count is not read.
        ...(drop
          ? [
              ", dropped AS (DELETE FROM timers WHERE tenant = ",
              0,
              " AND run_id = ",
              1,
              " AND effect_key = ",
              at + 3,
              " AND EXISTS (SELECT 1 FROM ok))",
            ]
          : []),
        " SELECT (SELECT COUNT(*) FROM written) AS written, (SELECT COUNT(*) FROM touched) AS touched, (SELECT COUNT(*) FROM released) AS released, (SELECT COUNT(*) FROM indexed) AS indexed, (SELECT COUNT(*) FROM sealed) AS sealed",
      ]),
    )
  }

  return { writeAtOnce, writeGuardedAtOnce, openStatements, sealOnHintAtOnce, sealDroppingOnHintAtOnce }
}
