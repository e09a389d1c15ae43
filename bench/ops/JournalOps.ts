/**
 * JournalStore's `append` of one `EffectStarted`/`EffectDone` pair: the write every effect of a
 * run makes. The raw mirror sends `JournalStoreSql`'s statements in its transaction: lock the
 * lease row, check the seal, read the head, insert the two records, touch the activity row.
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

const LOCK_LEASE = `SELECT epoch FROM run_lease WHERE tenant = $1 AND run_id = $2`
const SEAL = `SELECT outcome FROM run_seal WHERE tenant = $1 AND run_id = $2`
const HEAD = `SELECT seq, hash FROM journal WHERE tenant = $1 AND run_id = $2 ORDER BY seq DESC LIMIT 1`
const INSERT_RECORD = `INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING seq`
const activity = (now: string) =>
  `INSERT INTO run_activity (tenant, run_id, case_id, updated_at) VALUES ($1, $2, $3, ${now}) ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id`
const PG_NOW = "CAST(FLOOR(EXTRACT(EPOCH FROM now())) AS BIGINT)"
const SQLITE_NOW = "CAST(strftime('%s', 'now') AS INTEGER)"

/**
 * Prototype: the three checks in one locking read (lease row locked, seal and head beside it),
 * and both records with the activity touch in one statement: 4 round trips instead of 8.
 */
const STATE_ONE = `SELECT l.epoch, s.outcome, h.seq, h.hash FROM run_lease l LEFT JOIN run_seal s ON s.tenant = l.tenant AND s.run_id = l.run_id LEFT JOIN LATERAL (SELECT seq, hash FROM journal WHERE tenant = l.tenant AND run_id = l.run_id ORDER BY seq DESC LIMIT 1) h ON TRUE WHERE l.tenant = $1 AND l.run_id = $2 FOR UPDATE OF l`
const WRITE_ONE = `WITH rec AS (INSERT INTO journal (tenant, run_id, seq, epoch, kind, effect_key, case_id, prev_hash, hash, raw) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10), ($1, $2, $11, $4, $12, $13, $14, $15, $16, $17) RETURNING seq), act AS (INSERT INTO run_activity (tenant, run_id, case_id, updated_at) VALUES ($1, $2, $14, ${PG_NOW}) ON CONFLICT (tenant, run_id) DO UPDATE SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id) RETURNING run_id) SELECT (SELECT count(*) FROM rec) AS records, (SELECT count(*) FROM act) AS touched`

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
      prototypes: [{ name: "2 statements", run: (raw, i, w) => foldedAppend(raw, cell.tenant, w, at(i)) }],
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

const rawAppend = (raw: Raw, tenant: string, w: number, batch: ReadonlyArray<Journal.Append>) => {
  const run = runId(w)
  return raw.tx(async (q) => {
    const [lease] = await q(pick(raw, `${LOCK_LEASE} FOR UPDATE`, LOCK_LEASE), [tenant, run])
    expect(Number(lease?.epoch) === EPOCH, "raw append: lease not held")
    const sealed = await q(pick(raw, SEAL), [tenant, run])
    expect(sealed.length === 0, "raw append: run sealed")
    const [top] = await q(pick(raw, HEAD), [tenant, run])
    let seq = top === undefined ? 0 : Number(top.seq)
    let prev = top === undefined ? Digest.ZERO : Digest.Digest.make(Buffer.from(top.hash as Uint8Array).toString("hex"))
    for (const entry of batch) {
      seq += 1
      const body = Journal.body({ ...entry, run, seq: Seq.make(seq) })
      const hash = Digest.chain(prev, body)
      const written = await q(pick(raw, INSERT_RECORD), [
        tenant,
        run,
        seq,
        EPOCH,
        entry.kind.kind,
        Option.getOrNull(entry.effectKey),
        Option.getOrNull(entry.case),
        Buffer.from(prev, "hex"),
        Buffer.from(hash, "hex"),
        Buffer.from(body),
      ])
      expect(written.length === 1, "raw append wrote no record")
      prev = hash
    }
    await q(pick(raw, activity(PG_NOW), activity(SQLITE_NOW)), [tenant, run, null])
  })
}

const foldedAppend = (raw: Raw, tenant: string, w: number, batch: readonly [Journal.Append, Journal.Append]) => {
  const run = runId(w)
  return raw.tx(async (q) => {
    const [state] = await q(STATE_ONE, [tenant, run])
    expect(Number(state?.epoch) === EPOCH && state?.outcome === null, "folded append: lease not held or sealed")
    let seq = state?.seq === null || state?.seq === undefined ? 0 : Number(state.seq)
    let prev =
      state?.hash === null || state?.hash === undefined
        ? Digest.ZERO
        : Digest.Digest.make(Buffer.from(state.hash as Uint8Array).toString("hex"))
    const params: Array<unknown> = [tenant, run]
    for (const [n, entry] of batch.entries()) {
      seq += 1
      const body = Journal.body({ ...entry, run, seq: Seq.make(seq) })
      const hash = Digest.chain(prev, body)
      const own = [
        entry.kind.kind,
        Option.getOrNull(entry.effectKey),
        Option.getOrNull(entry.case),
        Buffer.from(prev, "hex"),
        Buffer.from(hash, "hex"),
        Buffer.from(body),
      ]
      params.push(...(n === 0 ? [seq, EPOCH, ...own] : [seq, ...own]))
      prev = hash
    }
    const [written] = await q(WRITE_ONE, params)
    expect(Number(written?.records) === 2, "folded append wrote no pair")
  })
}
