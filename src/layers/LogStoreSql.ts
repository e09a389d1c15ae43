/**
 * LogStore over `SqlClient`: one text for PostgreSQL and SQLite. Integration (Tessera's model)
 * reads the integrated size, the sealed leaves after it and the tree's right edge, computes the
 * new complete subtrees and the signed checkpoint in memory, and then writes them in one
 * transaction that first moves `log_tree.size` from the size it read (compare-and-set): of two
 * instances racing, one moves it and the other writes nothing, so each leaf is integrated once,
 * and a failure anywhere before the commit leaves the log as it was.
 *
 * Why the reads need no lock: seal rows are never updated or deleted, stored subtrees never
 * change, and a seal at position p + 1 commits only after the one at p (`LogSequence`), so the
 * leaves read after the size are contiguous and final, and the edge of a committed size is
 * committed with it. The compare-and-set is what makes the outcome of the read still true at
 * the commit.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import type { Digest } from "../domain/Digest.js"
import { RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import * as LogKey from "../domain/LogKey.js"
import * as LogLeaf from "../domain/LogLeaf.js"
import { EMPTY_ROOT } from "../domain/Merkle.js"
import * as MerkleNodes from "../domain/MerkleNodes.js"
import { TenantId } from "../domain/Tenant.js"
import { Timestamp } from "../domain/Time.js"
import { RunNotLogged } from "../errors/LogError.js"
import { Backend, Corrupt } from "../errors/StoreError.js"
import { LogStore, type StoredCheckpoint } from "../services/LogStore.js"
import { DigestBytes, decodeRows, digestParam, Int8 } from "./internal/Columns.js"
import * as LogRules from "./internal/LogRules.js"
import * as Sql from "./internal/Sql.js"

const SizeRow = Schema.Struct({ size: Int8 })
const LeafRow = Schema.Struct({
  run_id: RunId,
  outcome: Journal.RunOutcome,
  chain_head: DigestBytes,
  log_position: Int8,
  records: Int8,
})
const NodeRow = Schema.Struct({ level: Int8, idx: Int8, hash: DigestBytes })
const CheckpointRow = Schema.Struct({ size: Int8, root: DigestBytes, note: Schema.String, signed_at: Int8 })

// Subtree rows per multi-row insert: four parameters each, far under both dialects' limits.
const NODE_CHUNK = 1_000

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make

  const treeSize = (tenant: string) =>
    dialect.query(SizeRow, "log_tree", { named: true })`SELECT size FROM log_tree WHERE tenant = ${0}`(tenant).pipe(
      Effect.map(([row]) => row?.size ?? 0),
    )

  // A leaf's record count is its run's head seq: the journal of a sealed run never changes.
  const LEAF_COLUMNS = `s.run_id, s.outcome, s.chain_head, s.log_position,
    (SELECT COALESCE(MAX(j.seq), 0) FROM journal j WHERE j.tenant = s.tenant AND j.run_id = s.run_id) AS records`

  /** Up to `limit` sealed leaves from `from` on, by position, through `run_seal_position`. Parameters: tenant, from, limit. */
  const leavesFrom = dialect.query(LeafRow, "run_seal", { named: true })`
    SELECT ${LEAF_COLUMNS} FROM run_seal s WHERE s.tenant = ${0} AND s.log_position >= ${1}
     ORDER BY s.log_position LIMIT ${2}`

  /** A run's leaf. Parameters: tenant, run. */
  const leafOf = dialect.query(LeafRow, "run_seal", { named: true })`
    SELECT ${LEAF_COLUMNS} FROM run_seal s WHERE s.tenant = ${0} AND s.run_id = ${1}`

  /**
   * The subtrees a plan names, in one statement; a lookup that fails on one not stored (damage:
   * `Corrupt`). One primary-key probe per node, joined by UNION ALL: SQLite plans an OR of
   * `(level = ? AND idx = ?)` pairs as a search on `tenant` alone, a scan of the tenant's every
   * subtree, which at 1M leaves took 1,065 ms for an inclusion proof's 25 nodes against 0.14 ms
   * for the probes (`npm run bench -- --log`). pg reads the primary key in both forms (a BitmapOr;
   * an Append of index scans), the probes 0.3 ms the dearer there (0.91 against 0.63 ms). A plan
   * names about 2·log2(size) nodes at most, far under SQLite's 500 terms of a compound SELECT.
   */
  const nodesOf = (tenant: string, ids: ReadonlyArray<MerkleNodes.NodeId>) =>
    Effect.gen(function* () {
      const found = new Map<string, Digest>()
      if (ids.length > 0) {
        const probes = ids.map(
          (n) =>
            sql`SELECT level, idx, hash FROM log_node WHERE tenant = ${tenant} AND level = ${n.level} AND idx = ${n.index}`,
        )
        // No parentheses around the whole: SQLite refuses a parenthesized compound SELECT.
        const rows = yield* sql`${sql.join(" UNION ALL ", false)(probes)}`.pipe(
          Effect.flatMap(decodeRows(NodeRow, "log_node")),
        )
        for (const r of rows) found.set(`${r.level}/${r.idx}`, r.hash)
      }
      const missing = ids.find((n) => !found.has(`${n.level}/${n.index}`))
      if (missing !== undefined)
        return yield* new Corrupt({ detail: `log_node: subtree ${missing.level}/${missing.index} is missing`, seq: 0 })
      const lookup: MerkleNodes.Lookup = (level, index) => found.get(`${level}/${index}`) as Digest
      return lookup
    })

  /** Moves the integrated size from `from` to `to`, only if it is still `from`. Parameters: tenant, from, to. */
  const moveSize = dialect.command({ named: true })`
    INSERT INTO log_tree (tenant, size) VALUES (${0}, ${2})
    ON CONFLICT (tenant) DO UPDATE SET size = EXCLUDED.size WHERE log_tree.size = ${1}
    RETURNING size`

  const insertCheckpoint = dialect.command({ named: true })`
    INSERT INTO log_checkpoint (tenant, size, root, note, signed_at) VALUES (${0}, ${1}, ${2}, ${3}, ${4})
    RETURNING size`

  // Idempotent: callers signing the empty tree at once keep the first note.
  const insertEmptyCheckpoint = dialect.command({ named: true })`
    INSERT INTO log_checkpoint (tenant, size, root, note, signed_at) VALUES (${0}, 0, ${1}, ${2}, ${3})
    ON CONFLICT (tenant, size) DO NOTHING RETURNING size`

  const checkpointRow = dialect.query(CheckpointRow, "log_checkpoint", { named: true })`
    SELECT size, root, note, signed_at FROM log_checkpoint WHERE tenant = ${0} AND size = ${1}`

  const toCheckpoint = (row: typeof CheckpointRow.Type): StoredCheckpoint => ({
    size: row.size,
    root: row.root,
    note: row.note,
    signedAt: Timestamp.make(row.signed_at),
  })

  const checkpointOf = (tenant: string, size: number) =>
    Effect.map(checkpointRow(tenant, size), ([row]) => Option.map(Option.fromNullable(row), toCheckpoint))

  const toLeaf = (row: typeof LeafRow.Type) =>
    Effect.try({
      try: () =>
        new LogLeaf.LogLeaf({ run: row.run_id, chainHead: row.chain_head, records: row.records, outcome: row.outcome }),
      catch: (e) => new Corrupt({ detail: `run_seal: ${String(e)}`, seq: 0 }),
    })

  const notWritten = (what: string) => new Backend({ detail: `${what} was not written` })

  /**
   * The size-0 checkpoint, signed and stored first if the log has none: the insert keeps the first
   * of racing notes and each caller reads back the stored one, so all of them answer the same.
   */
  const emptyCheckpoint = (tenant: string, key: LogKey.LogKey, now: Timestamp) =>
    Effect.gen(function* () {
      const kept = yield* checkpointOf(tenant, 0)
      if (Option.isSome(kept)) return kept.value
      const note = yield* LogKey.sign(key, TenantId.make(tenant), 0, EMPTY_ROOT)
      yield* insertEmptyCheckpoint(tenant, digestParam(EMPTY_ROOT), note, now)
      const stored = yield* checkpointOf(tenant, 0)
      if (Option.isNone(stored)) return yield* notWritten("log_checkpoint")
      return stored.value
    })

  const integrate = Sql.verb((tenant, key: LogKey.LogKey, now: Timestamp, max: number) =>
    Effect.gen(function* () {
      const size = yield* treeSize(tenant)
      const limit = Sql.clampLimit(max)
      const rows = limit === 0 ? [] : yield* leavesFrom(tenant, size, limit)
      // Only the run of positions size, size + 1, …: the unique index and the order of commits
      // make it all of them, and a hole would be damage that must not be hashed over.
      const leaves: Array<LogLeaf.LogLeaf> = []
      for (const row of rows) {
        if (row.log_position !== size + leaves.length) break
        leaves.push(yield* toLeaf(row))
      }
      if (leaves.length === 0) {
        // The empty tree is signed at the first integration call, even one with no leaves:
        // `serve --log-key` calls it for every tenant at start, so a log with nothing sealed has
        // a size-0 checkpoint (RFC 9162, C2SP tlog-checkpoint; root SHA-256 of "") to keep.
        if (size === 0) yield* emptyCheckpoint(tenant, key, now)
        return { leaves: 0, size }
      }
      const edge = MerkleNodes.rootPlan(size).nodes
      const lookup = yield* nodesOf(tenant, edge)
      const done = MerkleNodes.integrate(
        size,
        edge.map((n) => lookup(n.level, n.index)),
        leaves.map(LogLeaf.hash),
      )
      const note = yield* LogKey.sign(key, TenantId.make(tenant), done.size, done.root)
      const won = yield* dialect.write(
        Effect.gen(function* () {
          // First, so the loser of a race stops here having written nothing.
          if ((yield* moveSize(tenant, size, done.size)) === 0) return false
          for (let i = 0; i < done.nodes.length; i += NODE_CHUNK) {
            const chunk = done.nodes.slice(i, i + NODE_CHUNK).map((n) => ({
              tenant,
              level: n.level,
              idx: n.index,
              hash: digestParam(n.hash),
            }))
            const written = yield* sql`INSERT INTO log_node ${sql.insert(chunk)} RETURNING level`
            if (written.length !== chunk.length) return yield* notWritten("log_node")
          }
          const stored = yield* insertCheckpoint(tenant, done.size, digestParam(done.root), note, now)
          if (stored !== 1) return yield* notWritten("log_checkpoint")
          return true
        }),
      )
      return won ? { leaves: leaves.length, size: done.size } : { leaves: 0, size }
    }),
  )

  return LogStore.of({
    integrate,
    signEmpty: Sql.verb((tenant, key: LogKey.LogKey, now: Timestamp) =>
      Effect.gen(function* () {
        const size = yield* treeSize(tenant)
        if (size === 0) return yield* emptyCheckpoint(tenant, key, now)
        // The size and its checkpoint commit together (`integrate`), so one missing is damage.
        const latest = yield* checkpointOf(tenant, size)
        if (Option.isNone(latest))
          return yield* new Corrupt({ detail: `log_checkpoint: none at the integrated size ${size}`, seq: 0 })
        return latest.value
      }),
    ),
    checkpoint: Sql.verb((tenant) => Effect.flatMap(treeSize(tenant), (size) => checkpointOf(tenant, size))),
    checkpointAt: Sql.verb((tenant, size: number) =>
      Number.isSafeInteger(size) && size >= 0 ? checkpointOf(tenant, size) : Effect.succeed(Option.none()),
    ),
    inclusionProof: Sql.verb((tenant, run: RunId, size: number) =>
      Effect.gen(function* () {
        const [row] = yield* leafOf(tenant, run)
        if (row === undefined) return yield* new RunNotLogged({ run })
        const latest = yield* treeSize(tenant)
        const position = row.log_position
        yield* LogRules.inclusion(run, position, size, latest)
        const plan = MerkleNodes.inclusionPlan(position, size)
        const lookup = yield* nodesOf(tenant, plan.nodes)
        return { index: position, size, leaf: yield* toLeaf(row), proof: MerkleNodes.prove(plan, lookup) }
      }),
    ),
    leaves: Sql.verb((tenant, from: number, limit: number) =>
      Effect.gen(function* () {
        const n = Sql.clampLimit(limit)
        if (n === 0 || !Number.isSafeInteger(from) || from < 0) return []
        const rows = yield* leavesFrom(tenant, from, n)
        return yield* Effect.forEach(rows, (row) =>
          Effect.map(toLeaf(row), (leaf) => ({ index: row.log_position, leaf })),
        )
      }),
    ),
    consistencyProof: Sql.verb((tenant, from: number, to: number) =>
      Effect.gen(function* () {
        yield* LogRules.consistency(from, to, yield* treeSize(tenant))
        if (from === 0) return []
        const plan = MerkleNodes.consistencyPlan(from, to)
        return MerkleNodes.prove(plan, yield* nodesOf(tenant, plan.nodes))
      }),
    ),
  })
})

export const layer: Layer.Layer<LogStore, never, SqlClient.SqlClient> = Layer.effect(LogStore, make)
