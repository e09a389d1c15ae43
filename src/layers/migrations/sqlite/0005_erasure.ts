/**
 * Migration `0005_erasure`, SQLite dialect (the other set mirrors it): the two tables of §9.1.
 *
 * `blobs` is the table-backed BlobStore, for PostgreSQL deployments with no shared disk (the
 * filesystem one is the default). A row with `bytes` NULL and `expired_at` set is a tombstone;
 * the row is never deleted, so the first expiry stands and a later put of the same bytes is refused.
 *
 * `key_ring` holds the data keys, wrapped by the operator's KEK; `wrapped` NULL with
 * `destroyed_at` set is a destroyed scope, never given a new key. The table is created in every
 * migrated database, but a deployment that wants erasure to reach its backups points the key ring
 * at a database of its own (the README says why).
 */
export const statements: ReadonlyArray<string> = [
  `CREATE TABLE IF NOT EXISTS blobs (
    tenant     TEXT    NOT NULL,
    digest     BLOB    NOT NULL,
    bytes      BLOB,
    expired_at INTEGER,
    reason     TEXT,
    PRIMARY KEY (tenant, digest)
  )`,

  `CREATE TABLE IF NOT EXISTS key_ring (
    tenant       TEXT    NOT NULL,
    scope        TEXT    NOT NULL,
    kek_id       TEXT,
    wrapped      BLOB,
    destroyed_at INTEGER,
    reason       TEXT,
    PRIMARY KEY (tenant, scope)
  )`,
]
