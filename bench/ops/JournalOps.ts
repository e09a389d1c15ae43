/**
 * JournalStore's `append` of one `EffectStarted`/`EffectDone` pair: the write every effect of a
 * run makes. The raw mirror sends `JournalStoreSql`'s statements: in a transaction, one read of
 * the locked lease row, the seal and the head; then pg writes both records and the activity touch
 * in one guarded statement, sqlite in three (no writes inside WITH there). pg remembers the head
 * it wrote, so a run's later pairs are that guarded statement alone, as the store's are.
 * It builds each record's bytes with the domain's canonical encoder and chains the hash as the
 * store does: any client must send those bytes, so that work is part of the ceiling, not overhead.
 */
import { Effect, Option } from "effect"
import * as Digest from "../../src/domain/Digest.js"
import { Epoch, Seq, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { effectKey, expect, type Op, runId } from "../Op.js"
import { insertRows, pick, type Raw } from "../Raw.js"

const state = (forUpdate: string, p: (n: number) => string) =>
  `SELECT (SELECT epoch FROM run_lease WHERE tenant = ${p(1)} AND run_id = ${p(2)} ${forUpdate}) AS epoch, (SELECT outcome FROM run_seal WHERE tenant = ${p(1)} AND run_id = ${p(2)}) AS sealed, (SELECT seq FROM journal WHERE tenant = ${p(1)} AND run_id = ${p(2)} ORDER BY seq DESC LIMIT 1) AS head_seq, (SELECT hash FROM journal WHERE tenant = ${p(1)} AND run_id = ${p(2)} ORDER BY seq DESC LIMIT 1) AS head_hash`
const PG_STATE = state("FOR UPDATE", (n) => `$${n}`)
const SQLITE_STATE = state("", () => "?")
const INSERT_RECORD = `INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq`
const SQLITE_ACTIVITY = `INSERT INTO run_activity (tenant, run_id, case_id, updated_at) VALUES (?, ?, ?, CAST(strftime('%s', 'now') AS INTEGER)) ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id`
/** pg: both records and the activity touch, written only if $4 is the run's lease epoch (its row locked), the run is unsealed and its head is still $3. */
const PG_WRITE_PAIR = `WITH ok AS (SELECT 1 AS ok FROM run_lease WHERE tenant = $1 AND run_id = $2 AND epoch = CAST($4 AS BIGINT) AND NOT EXISTS (SELECT 1 FROM run_seal WHERE tenant = $1 AND run_id = $2) AND COALESCE((SELECT MAX(seq) FROM journal WHERE tenant = $1 AND run_id = $2), 0) = CAST($3 AS BIGINT) FOR UPDATE), written AS (INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) SELECT $1, $2, r.seq, CAST($4 AS BIGINT), r.kind, r.effect_key, r.case_id, r.prev_hash, r.hash, r.raw FROM ok, (VALUES (CAST($6 AS BIGINT), $7, $8, $9, CAST($10 AS BYTEA), CAST($11 AS BYTEA), CAST($12 AS BYTEA)), (CAST($13 AS BIGINT), $14, $15, $16, CAST($17 AS BYTEA), CAST($18 AS BYTEA), CAST($19 AS BYTEA))) AS r (seq, kind, effect_key, case_id, prev_hash, hash, raw) RETURNING seq), touched AS (INSERT INTO run_activity (tenant, run_id, case_id, updated_at) SELECT $1, $2, $5, CAST(FLOOR(EXTRACT(EPOCH FROM now())) AS BIGINT) FROM ok ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id) SELECT (SELECT COUNT(*) FROM written) AS written, (SELECT COUNT(*) FROM touched) AS touched`

const EPOCH = Epoch.make(1)

export const appendPair: Op = {
  name: "journal append (EffectStarted + EffectDone)",
  ops: 2000,
  make: (cell) => {
    const pairs = Array.from({ length: cell.count }, (_, i) => pair(i))
    const at = (i: number) => pairs[i] ?? pair(i)
    return {
      // One run per worker, its lease held at epoch 1: workers never wait on each other's lease row.
      seed: (raw) =>
        insertRows(
          raw,
          "run_lease",
          ["tenant", "run_id", "owner", "epoch", "expires_at"],
          Array.from({ length: cell.workers }, (_, w) => [cell.tenant, runId(w), "bench", 1, 4_000_000_000]),
        ),
      store: (i, w) =>
        Effect.flatMap(JournalStore, (s) => s.append(runId(w), EPOCH, at(i))).pipe(
          Effect.map((records) => expect(records.length === 2, "append wrote no pair")),
        ),
      raw: (raw, i, w) => rawAppend(raw, cell.tenant, w, at(i)),
    }
  },
}

// internal

const pair = (i: number): readonly [Journal.Append, Journal.Append] => {
  const common = { case: Option.none(), step: StepId.make(1), effectKey: Option.some(effectKey(i)) } as const
  return [
    new Journal.Append({
      ...common,
      kind: {
        kind: "EffectStarted",
        descriptor: { tool: "crm.update", args: { id: i } },
        recovery: "retry",
        mutates: true,
        attempt: 0,
        backoff_ms: 0,
        outbound_label: "internal",
      },
    }),
    new Journal.Append({
      ...common,
      kind: { kind: "EffectDone", output: { ok: true }, source: "live", spend: { tokens: 0 }, declared: null },
    }),
  ]
}

/**
 * pg: the head each raw run was last written at, as the store remembers its own: a worker's
 * first pair reads the locked state in a transaction, every later one is the guarded write
 * alone, autocommitted.
 */
const rawHeads = new Map<string, { readonly seq: number; readonly hash: Digest.Digest }>()

/** The pair's rows on top of `seq`/`prev`, and the head they leave. */
const rowsOf = (run: string, seq: number, prev: Digest.Digest, batch: ReadonlyArray<Journal.Append>) => {
  const rows: Array<ReadonlyArray<unknown>> = []
  for (const entry of batch) {
    seq += 1
    const body = Journal.body({ ...entry, run: run as never, seq: Seq.make(seq) })
    const hash = Digest.chain(prev, body)
    rows.push([
      seq,
      entry.kind.kind,
      Option.getOrNull(entry.effectKey),
      Option.getOrNull(entry.case),
      Buffer.from(prev, "hex"),
      Buffer.from(hash, "hex"),
      Buffer.from(body),
    ])
    prev = hash
  }
  return { rows, head: { seq, hash: prev } }
}

const rawAppend = async (raw: Raw, tenant: string, w: number, batch: ReadonlyArray<Journal.Append>) => {
  const run = runId(w)
  const pg = raw.dialect === "pg"
  const known = pg ? rawHeads.get(`${tenant}/${run}`) : undefined
  if (known !== undefined) {
    const { rows, head } = rowsOf(run, known.seq, known.hash, batch)
    const [written] = await raw.query(PG_WRITE_PAIR, [tenant, run, known.seq, EPOCH, null, ...rows.flat()], true)
    expect(Number(written?.written) === 2 && Number(written?.touched) === 1, "raw append wrote no pair")
    rawHeads.set(`${tenant}/${run}`, head)
    return
  }
  await raw.tx(async (q) => {
    const [top] = pg
      ? await q(PG_STATE, [tenant, run], true)
      : await q(SQLITE_STATE, [tenant, run, tenant, run, tenant, run, tenant, run])
    expect(Number(top?.epoch) === EPOCH && top?.sealed === null, "raw append: lease not held, or sealed")
    const at = top?.head_seq === null || top?.head_seq === undefined ? 0 : Number(top.head_seq)
    const prev =
      top?.head_hash === null || top?.head_hash === undefined
        ? Digest.ZERO
        : Digest.Digest.make(Buffer.from(top.head_hash as Uint8Array).toString("hex"))
    const { rows, head } = rowsOf(run, at, prev, batch)
    if (pg) {
      const [written] = await q(PG_WRITE_PAIR, [tenant, run, at, EPOCH, null, ...rows.flat()], true)
      expect(Number(written?.written) === 2 && Number(written?.touched) === 1, "raw append wrote no pair")
      rawHeads.set(`${tenant}/${run}`, head)
      return
    }
    for (const [recordSeq, ...rest] of rows) {
      const written = await q(pick(raw, INSERT_RECORD), [tenant, run, recordSeq, EPOCH, ...rest])
      expect(written.length === 1, "raw append wrote no record")
    }
    await q(SQLITE_ACTIVITY, [tenant, run, null])
  })
}
