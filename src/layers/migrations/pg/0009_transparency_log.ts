/**
 * Migration `0009_transparency_log`, PostgreSQL dialect (the other set mirrors it): the per-tenant
 * transparency log of §6.5.
 *
 * Positions. A seal's `log_position` was `nextval('run_log_position')`: one numbering across
 * tenants, with gaps wherever a sealing transaction rolled back. The log needs dense positions
 * from 0 per tenant, so each tenant has a counter row (`log_sequence`) that the seal's own
 * statement increments (Tessera's sequencing): the row lock it takes is held to the seal's
 * commit, so the next seal of the tenant takes the next number only after this one committed,
 * and a seal rolled back gives its number back. Existing seals are renumbered densely per tenant
 * in their old order, and the counters start where they end.
 *
 * The tree. Integration (`LogStore.integrate`) hashes sealed leaves into the tree later, in
 * position order: `log_tree` holds the integrated size (the compare-and-set that lets one of two
 * racing instances integrate a batch), `log_node` every complete subtree (written once, never
 * updated: `MerkleNodes`), `log_checkpoint` the signed checkpoint of each integration.
 */
export const TABLES: ReadonlyArray<string> = ["log_sequence", "log_tree", "log_node", "log_checkpoint"]

export const statements: ReadonlyArray<string> = [
  `ALTER TABLE run_seal DROP CONSTRAINT IF EXISTS run_seal_log_position_check`,
  // Dense from 0 per tenant, in the order the global sequence gave.
  `UPDATE run_seal AS s SET log_position = r.position
     FROM (SELECT tenant, run_id, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY log_position) - 1 AS position
             FROM run_seal) AS r
    WHERE s.tenant = r.tenant AND s.run_id = r.run_id`,
  `ALTER TABLE run_seal ADD CONSTRAINT run_seal_log_position_check CHECK (log_position >= 0)`,

  // Serves integration's read of the leaves from the integrated size on; unique, so no two seals
  // of a tenant can ever share a position.
  `CREATE UNIQUE INDEX IF NOT EXISTS run_seal_position ON run_seal (tenant, log_position)`,

  // Each tenant's sequenced size: the next seal's position.
  `CREATE TABLE IF NOT EXISTS log_sequence (
    tenant TEXT   NOT NULL PRIMARY KEY,
    size   BIGINT NOT NULL CHECK (size >= 0)
  )`,
  `INSERT INTO log_sequence (tenant, size) SELECT tenant, COUNT(*) FROM run_seal GROUP BY tenant`,
  `DROP SEQUENCE IF EXISTS run_log_position`,

  // Each tenant's integrated size: integration moves it only from the size it read.
  `CREATE TABLE IF NOT EXISTS log_tree (
    tenant TEXT   NOT NULL PRIMARY KEY,
    size   BIGINT NOT NULL CHECK (size >= 0)
  )`,

  // Complete subtrees: (level, idx) covers leaves [idx·2^level, (idx+1)·2^level).
  `CREATE TABLE IF NOT EXISTS log_node (
    tenant TEXT    NOT NULL,
    level  INTEGER NOT NULL CHECK (level >= 0),
    idx    BIGINT  NOT NULL CHECK (idx >= 0),
    hash   BYTEA   NOT NULL,
    PRIMARY KEY (tenant, level, idx)
  )`,

  // One signed checkpoint per integration, by size.
  `CREATE TABLE IF NOT EXISTS log_checkpoint (
    tenant    TEXT   NOT NULL,
    size      BIGINT NOT NULL CHECK (size >= 0),
    root      BYTEA  NOT NULL,
    note      TEXT   NOT NULL,
    signed_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, size)
  )`,

  // As every store table (`0008_serial_reads`): a tenant's read is never split over workers.
  ...TABLES.map((table) => `ALTER TABLE ${table} SET (parallel_workers = 0)`),
]
