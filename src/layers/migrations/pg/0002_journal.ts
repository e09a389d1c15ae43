/**
 * Migration `0002_journal`, PostgreSQL dialect: the run journal and its derived indexes
 * (activity, leases, seals, outcomes, admissions, cancellations).
 *
 * `../sqlite/0002_journal.ts` mirrors this file table for table and index for index, under the
 * same names; a change here is a change there. The two sequences have no SQLite counterpart:
 * SQLite takes MAX + 1 inside its write-locked transaction.
 *
 * Each element is one statement, each guarded with `IF NOT EXISTS` so running the set again
 * changes nothing. Every primary key starts with `tenant`.
 */
export const statements: ReadonlyArray<string> = [
  // One row per record. `raw` is the canonical body the hash was computed over; step, phase and
  // the payload live only there, so a reader can never hash anything but the written bytes.
  `CREATE TABLE IF NOT EXISTS journal (
    tenant     TEXT   NOT NULL,
    run_id     TEXT   NOT NULL,
    seq        BIGINT NOT NULL CHECK (seq >= 1),
    epoch      BIGINT NOT NULL CHECK (epoch >= 1),
    kind       TEXT   NOT NULL,
    effect_key TEXT,
    case_id    TEXT,
    prev_hash  BYTEA  NOT NULL,
    hash       BYTEA  NOT NULL,
    raw        BYTEA  NOT NULL,
    key_id     TEXT,
    signature  TEXT,
    PRIMARY KEY (tenant, run_id, seq)
  )`,

  // Exactly-once: a second EffectStarted for one key in one run violates this index.
  `CREATE UNIQUE INDEX IF NOT EXISTS journal_effect_started
    ON journal (tenant, run_id, effect_key) WHERE kind = 'EffectStarted'`,

  // Serves `caseHistory`: a case's records by (run, seq).
  `CREATE INDEX IF NOT EXISTS journal_by_case
    ON journal (tenant, case_id, run_id, seq) WHERE case_id IS NOT NULL`,

  // The last time each run was written (backend clock) and its case.
  `CREATE TABLE IF NOT EXISTS run_activity (
    tenant     TEXT   NOT NULL,
    run_id     TEXT   NOT NULL,
    case_id    TEXT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id)
  )`,

  // Serves `recentRuns`: (updated_at desc, run desc) paging.
  `CREATE INDEX IF NOT EXISTS run_activity_recent
    ON run_activity (tenant, updated_at DESC, run_id DESC)`,

  // One lease per run; `owner` is '' once released, and the row keeps its epoch so the next
  // acquire goes higher and stale writers stay fenced.
  `CREATE TABLE IF NOT EXISTS run_lease (
    tenant     TEXT   NOT NULL,
    run_id     TEXT   NOT NULL,
    owner      TEXT   NOT NULL,
    epoch      BIGINT NOT NULL CHECK (epoch >= 1),
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id)
  )`,

  // Serves `abandonedRuns`: held leases by expiry.
  `CREATE INDEX IF NOT EXISTS run_lease_held
    ON run_lease (tenant, expires_at) WHERE owner <> ''`,

  // Where seals take their log position, so a transparency log can be built from them later.
  `CREATE SEQUENCE IF NOT EXISTS run_log_position`,

  // One seal per run (the key refuses a second).
  `CREATE TABLE IF NOT EXISTS run_seal (
    tenant       TEXT   NOT NULL,
    run_id       TEXT   NOT NULL,
    outcome      TEXT   NOT NULL,
    chain_head   BYTEA  NOT NULL,
    log_position BIGINT NOT NULL CHECK (log_position >= 1),
    sealed_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id)
  )`,

  // Orders conclusions across runs: the latest RunSealed record takes the next ordinal.
  `CREATE SEQUENCE IF NOT EXISTS run_conclusion_ordinal`,

  // Each run's latest conclusion.
  `CREATE TABLE IF NOT EXISTS run_outcome (
    tenant  TEXT   NOT NULL,
    run_id  TEXT   NOT NULL,
    outcome TEXT   NOT NULL,
    ordinal BIGINT NOT NULL CHECK (ordinal >= 1),
    PRIMARY KEY (tenant, run_id)
  )`,

  // Serves `runsByOutcome`: most recent conclusion first.
  `CREATE INDEX IF NOT EXISTS run_outcome_recent
    ON run_outcome (tenant, outcome, ordinal DESC)`,

  // The admission arbiter: the key's primary key lets one run hold it.
  `CREATE TABLE IF NOT EXISTS run_admission (
    tenant      TEXT   NOT NULL,
    key         TEXT   NOT NULL,
    run_id      TEXT   NOT NULL,
    admitted_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, key)
  )`,

  // Serves `forgetAdmissions`: keys by age.
  `CREATE INDEX IF NOT EXISTS run_admission_age
    ON run_admission (tenant, admitted_at)`,

  // The first cancellation request per run wins by ON CONFLICT DO NOTHING.
  `CREATE TABLE IF NOT EXISTS run_cancel (
    tenant       TEXT   NOT NULL,
    run_id       TEXT   NOT NULL,
    actor        TEXT   NOT NULL,
    reason       TEXT   NOT NULL,
    requested_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id)
  )`,
]
