/**
 * Migration `0001_case_layer`, PostgreSQL dialect: the stores for cases, inbound
 * events, subscriptions, timers, tasks, batches and quota.
 *
 * `../sqlite/0001_case_layer.ts` mirrors this file table for table and index for
 * index, under the same names; a change here is a change there.
 *
 * Each element is one statement, listed parents before children, and each is
 * guarded with `IF NOT EXISTS` so running the set again changes nothing.
 *
 * Tenancy: every primary key starts with `tenant` and every foreign key includes
 * it, so a query that forgets the tenant predicate finds nothing instead of a
 * neighbour's row, and no child row can point at another tenant's parent.
 */
export const statements: ReadonlyArray<string> = [
  // `state` is JSON text. `version` is the compare-and-swap counter: a state
  // write names the version it read and bumps it, which is what keeps several
  // plane instances sharing this database from overwriting each other.
  `CREATE TABLE IF NOT EXISTS cases (
    tenant    TEXT   NOT NULL,
    case_id   TEXT   NOT NULL,
    kind      TEXT   NOT NULL,
    status    TEXT   NOT NULL,
    state     TEXT   NOT NULL,
    version   BIGINT NOT NULL DEFAULT 0 CHECK (version >= 0),
    opened_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, case_id)
  )`,

  // Serves `byStatus`: a tenant's cases in one status, newest first.
  `CREATE INDEX IF NOT EXISTS cases_by_status
    ON cases (tenant, status, opened_at DESC)`,

  // Every business key a case has held; `open` goes false when the case closes,
  // and the row stays so `case` can still report the key.
  `CREATE TABLE IF NOT EXISTS case_correlation (
    tenant    TEXT    NOT NULL,
    case_id   TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    value     TEXT    NOT NULL,
    open      BOOLEAN NOT NULL DEFAULT TRUE,
    PRIMARY KEY (tenant, case_id, namespace, value),
    FOREIGN KEY (tenant, case_id) REFERENCES cases (tenant, case_id) ON DELETE CASCADE
  )`,

  // Serves `correlate` / `correlateOrOpen`; as UNIQUE it also settles their race: one open case per key per tenant.
  `CREATE UNIQUE INDEX IF NOT EXISTS case_correlation_open
    ON case_correlation (tenant, namespace, value) WHERE open`,

  // The runs attached to a case; `seq` is the attachment position.
  `CREATE TABLE IF NOT EXISTS case_runs (
    tenant  TEXT   NOT NULL,
    case_id TEXT   NOT NULL,
    run_id  TEXT   NOT NULL,
    seq     BIGINT NOT NULL CHECK (seq >= 0),
    PRIMARY KEY (tenant, case_id, run_id),
    FOREIGN KEY (tenant, case_id) REFERENCES cases (tenant, case_id) ON DELETE CASCADE
  )`,

  // Serves `case`'s run order, and is the last line under `attachRun`: positions come from
  // `cases.runs_next` read under the case row's lock, so two attaches never compute the same one.
  `CREATE UNIQUE INDEX IF NOT EXISTS case_runs_order
    ON case_runs (tenant, case_id, seq)`,

  // Artifacts a case wrote, recorded at write time: a digest alone cannot lead
  // an erasure request back to its case.
  `CREATE TABLE IF NOT EXISTS case_blobs (
    tenant     TEXT   NOT NULL,
    case_id    TEXT   NOT NULL,
    digest     BYTEA  NOT NULL,
    written_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, case_id, digest),
    FOREIGN KEY (tenant, case_id) REFERENCES cases (tenant, case_id) ON DELETE CASCADE
  )`,

  // Serves `blobsOf`: a case's digests in written order.
  `CREATE INDEX IF NOT EXISTS case_blobs_time
    ON case_blobs (tenant, case_id, written_at)`,

  `CREATE TABLE IF NOT EXISTS case_deadlines (
    tenant          TEXT   NOT NULL,
    case_id         TEXT   NOT NULL,
    name            TEXT   NOT NULL,
    resolved_at     BIGINT NOT NULL,
    calendar_digest BYTEA  NOT NULL,
    warn_at         BIGINT,
    state           TEXT   NOT NULL,
    PRIMARY KEY (tenant, case_id, name),
    FOREIGN KEY (tenant, case_id) REFERENCES cases (tenant, case_id) ON DELETE CASCADE
  )`,

  // Serves `due`, `breached` and `census`: deadlines by state, earliest due first.
  `CREATE INDEX IF NOT EXISTS case_deadlines_due
    ON case_deadlines (tenant, state, resolved_at)`,

  // The inbound buffer. `event_id` is the dedup key (source + id), since an id
  // is unique only within its producer; `bare_id` keeps the producer's id as it
  // arrived rather than parsing it back out of the key.
  // Aggressive autovacuum: claimed and deleted rows pile up at the head of this table's indexes.
  `CREATE TABLE IF NOT EXISTS inbound_events (
    tenant      TEXT    NOT NULL,
    -- Byte order, as SQLite compares: claimFor and deadLetters break ties on it.
    event_id    TEXT COLLATE "C" NOT NULL,
    source      TEXT    NOT NULL,
    bare_id     TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    received_at BIGINT  NOT NULL,
    claimed_by  TEXT,
    claimed_at  BIGINT,
    dead        BOOLEAN NOT NULL DEFAULT FALSE,
    dead_reason TEXT,
    PRIMARY KEY (tenant, event_id)
  ) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
  )`,

  // Serves `sweepUnclaimed`: partial, so it holds only unclaimed live events, by age.
  `CREATE INDEX IF NOT EXISTS inbound_events_live
    ON inbound_events (tenant, received_at)
    WHERE claimed_by IS NULL AND NOT dead`,

  // Serves `deadLetters`: partial over retired events, newest first.
  `CREATE INDEX IF NOT EXISTS inbound_events_dead
    ON inbound_events (tenant, received_at DESC)
    WHERE dead`,

  // Serves `unsubscribe`: finds the events a run holds so their payloads can be stripped.
  `CREATE INDEX IF NOT EXISTS inbound_events_claimed
    ON inbound_events (tenant, claimed_by)
    WHERE claimed_by IS NOT NULL`,

  `CREATE TABLE IF NOT EXISTS inbound_correlation (
    tenant    TEXT NOT NULL,
    event_id  TEXT COLLATE "C" NOT NULL,
    namespace TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (tenant, event_id, namespace, value),
    FOREIGN KEY (tenant, event_id) REFERENCES inbound_events (tenant, event_id) ON DELETE CASCADE
  )`,

  // Serves `claimFor`: the buffered events that carry a given business key.
  `CREATE INDEX IF NOT EXISTS inbound_correlation_by_key
    ON inbound_correlation (tenant, namespace, value)`,

  // Registered waits, one row per correlation key. The tenant matters most
  // here: a cross-tenant match would hand one tenant's message to another's run.
  // The primary key orders a run's waits by effect key for `deliverTo`.
  // Aggressive autovacuum: claimed and deleted rows pile up at the head of this table's indexes.
  `CREATE TABLE IF NOT EXISTS subscriptions (
    tenant     TEXT   NOT NULL,
    run_id     TEXT   NOT NULL,
    effect_key TEXT   NOT NULL,
    case_id    TEXT,
    step       BIGINT NOT NULL,
    phase      TEXT   NOT NULL,
    event_kind TEXT   NOT NULL,
    namespace  TEXT   NOT NULL,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id, effect_key, namespace, value)
  ) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
  )`,

  // Serves `matchWaiter`: who waits on this kind and key, knowing only what the event carries.
  `CREATE INDEX IF NOT EXISTS subscriptions_by_key
    ON subscriptions (tenant, event_kind, namespace, value)`,

  // Serves `waiting`: registered waits, oldest first.
  `CREATE INDEX IF NOT EXISTS subscriptions_by_age
    ON subscriptions (tenant, created_at)`,

  // Clock waits. A re-arm hits the primary key and changes nothing. `claimable_at` is the
  // first instant a sweeper may take the timer: `fire_at` when armed, `claimed_at + 60` once
  // claimed (a claim needs `fire_at <= now`, so the lease end is never before `fire_at`).
  // Aggressive autovacuum: claimed and deleted rows pile up at the head of this table's indexes.
  `CREATE TABLE IF NOT EXISTS timers (
    tenant       TEXT   NOT NULL,
    run_id       TEXT   NOT NULL,
    effect_key   TEXT   NOT NULL,
    case_id      TEXT,
    step         BIGINT NOT NULL,
    phase        TEXT   NOT NULL,
    fire_at      BIGINT NOT NULL,
    claimed_at   BIGINT,
    claimable_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id, effect_key)
  ) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
  )`,

  // Serves `claimDue`: keyed on when a timer can next be taken, so a claim moves its row past
  // `now` and the range `claimable_at <= now` holds only takeable rows; a plain (tenant, fire_at)
  // index kept every held claim at the queue head, re-scanned by each sweep until disarmed.
  `CREATE INDEX IF NOT EXISTS timers_due
    ON timers (tenant, claimable_at)`,

  // Serves `pending`: every armed timer in its total order (fire instant, run, effect).
  `CREATE INDEX IF NOT EXISTS timers_pending
    ON timers (tenant, fire_at, run_id, effect_key)`,

  // Human tasks. Roles and actors are TEXT[] rather than a joined string: the
  // names are four-eyes operands and may contain any character, commas included.
  // Aggressive autovacuum: claimed and deleted rows pile up at the head of this table's indexes.
  `CREATE TABLE IF NOT EXISTS tasks (
    tenant          TEXT   NOT NULL,
    task_id         TEXT   NOT NULL,
    run_id          TEXT   NOT NULL,
    case_id         TEXT,
    kind            TEXT   NOT NULL,
    justification   TEXT   NOT NULL,
    candidate_roles TEXT[] NOT NULL,
    escalate_to     TEXT[] NOT NULL,
    excluded_actors TEXT[] NOT NULL,
    assignee        TEXT,
    priority        TEXT   NOT NULL,
    state           TEXT   NOT NULL,
    on_expiry       TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    due_at          BIGINT,
    PRIMARY KEY (tenant, task_id)
  ) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
  )`,

  // Serves `queue`, and gives it its order: partial on the two queued states, so one index range
  // holds exactly the queue, ranked, oldest first, ties on task_id; the scan stops at the limit
  // instead of sorting a large pending backlog. The CASE is character for character the one in
  // queue's ORDER BY, or the planner cannot use the index for the order.
  `CREATE INDEX IF NOT EXISTS tasks_queue_rank
    ON tasks (tenant, (CASE priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END), created_at, task_id)
    WHERE state IN ('open', 'escalated')`,

  // Serves `overdue`: partial, since most tasks carry no due instant.
  `CREATE INDEX IF NOT EXISTS tasks_due
    ON tasks (tenant, due_at)
    WHERE due_at IS NOT NULL`,

  // Serves `forCase`: one case's tasks, oldest first.
  `CREATE INDEX IF NOT EXISTS tasks_by_case
    ON tasks (tenant, case_id, created_at)`,

  // The stored plan digest is the record of which plan a batch runs.
  `CREATE TABLE IF NOT EXISTS batches (
    tenant      TEXT    NOT NULL,
    batch_id    TEXT    NOT NULL,
    plan_digest TEXT    NOT NULL,
    exhausted   BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (tenant, batch_id)
  )`,

  // The primary key arbitrates reservations and gives `cursor` and `items`
  // their key order. Spend is non-negative by constraint, not by convention.
  `CREATE TABLE IF NOT EXISTS batch_items (
    tenant   TEXT   NOT NULL,
    batch_id TEXT   NOT NULL,
    -- Byte order, as SQLite compares: the cursor and the key-ordered reads must not change
    -- with the database's locale ("B" sorts before "a" in bytes, after it under en-US).
    item_key TEXT COLLATE "C" NOT NULL,
    run_id   TEXT   NOT NULL,
    outcome  TEXT,
    detail   TEXT,
    tokens   BIGINT NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    minor    BIGINT NOT NULL DEFAULT 0 CHECK (minor >= 0),
    PRIMARY KEY (tenant, batch_id, item_key),
    FOREIGN KEY (tenant, batch_id) REFERENCES batches (tenant, batch_id) ON DELETE CASCADE
  )`,

  // Running runs as a set of named members, not a counter: a slot left behind
  // by a crash still says which run holds it, and releasing twice is harmless.
  // Aggressive autovacuum: claimed and deleted rows pile up at the head of this table's indexes.
  `CREATE TABLE IF NOT EXISTS quota_running (
    tenant      TEXT   NOT NULL,
    run_id      TEXT   NOT NULL,
    admitted_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, run_id)
  ) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
  )`,

  // Emergency stop: a row means the tenant is halted. Kept in the database so
  // it stops every instance, not just the one it was set on.
  `CREATE TABLE IF NOT EXISTS quota_halted (
    tenant TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (tenant)
  )`,

  // Per-period spend totals; the primary key is the accrual upsert's target.
  `CREATE TABLE IF NOT EXISTS quota_spent (
    tenant      TEXT   NOT NULL,
    period      TEXT   NOT NULL,
    tokens      BIGINT NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    minor_units BIGINT NOT NULL DEFAULT 0 CHECK (minor_units >= 0),
    PRIMARY KEY (tenant, period)
  )`,
]
