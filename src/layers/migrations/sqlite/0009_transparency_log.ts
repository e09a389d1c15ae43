/**
 * Migration `0009_transparency_log`, SQLite dialect (see the PostgreSQL set for why): dense
 * per-tenant log positions counted in `log_sequence`, and the tables of the integrated tree.
 *
 * SQLite cannot alter a CHECK constraint, so `run_seal` is rebuilt with `log_position >= 0`,
 * its seals renumbered densely per tenant in their old order on the way.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE TABLE run_seal_dense (
    tenant       TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    outcome      TEXT    NOT NULL,
    chain_head   BLOB    NOT NULL,
    log_position INTEGER NOT NULL CHECK (log_position >= 0),
    sealed_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant, run_id)
  )`,
  // In the old position order, so rowid order stays seal order.
  `INSERT INTO run_seal_dense (tenant, run_id, outcome, chain_head, log_position, sealed_at)
   SELECT tenant, run_id, outcome, chain_head,
          ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY log_position) - 1, sealed_at
     FROM run_seal ORDER BY log_position`,
  `DROP TABLE run_seal`,
  `ALTER TABLE run_seal_dense RENAME TO run_seal`,

  // Serves integration's read of the leaves from the integrated size on; unique, so no two seals
  // of a tenant can ever share a position.
  `CREATE UNIQUE INDEX IF NOT EXISTS run_seal_position ON run_seal (tenant, log_position)`,

  // Each tenant's sequenced size: the next seal's position.
  `CREATE TABLE IF NOT EXISTS log_sequence (
    tenant TEXT    NOT NULL PRIMARY KEY,
    size   INTEGER NOT NULL CHECK (size >= 0)
  )`,
  `INSERT INTO log_sequence (tenant, size) SELECT tenant, COUNT(*) FROM run_seal GROUP BY tenant`,

  // Each tenant's integrated size: integration moves it only from the size it read.
  `CREATE TABLE IF NOT EXISTS log_tree (
    tenant TEXT    NOT NULL PRIMARY KEY,
    size   INTEGER NOT NULL CHECK (size >= 0)
  )`,

  // Complete subtrees: (level, idx) covers leaves [idx·2^level, (idx+1)·2^level).
  `CREATE TABLE IF NOT EXISTS log_node (
    tenant TEXT    NOT NULL,
    level  INTEGER NOT NULL CHECK (level >= 0),
    idx    INTEGER NOT NULL CHECK (idx >= 0),
    hash   BLOB    NOT NULL,
    PRIMARY KEY (tenant, level, idx)
  )`,

  // One signed checkpoint per integration, by size.
  `CREATE TABLE IF NOT EXISTS log_checkpoint (
    tenant    TEXT    NOT NULL,
    size      INTEGER NOT NULL CHECK (size >= 0),
    root      BLOB    NOT NULL,
    note      TEXT    NOT NULL,
    signed_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, size)
  )`,
]
