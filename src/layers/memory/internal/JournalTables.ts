/**
 * The memory journal's tables and the pure helpers over them: rows as stored, leases, seals, the
 * snapshot an append alongside another write restores on failure, and the decoding of a stored
 * row into the record `read` returns. Kept apart from the store's verbs so each file is one idea.
 */
import { type Clock, Either, Option } from "effect"
import * as Digest from "../../../domain/Digest.js"
import type { EffectKey } from "../../../domain/EffectKey.js"
import { type CaseId, Epoch, type RunId } from "../../../domain/Ids.js"
import * as Journal from "../../../domain/Journal.js"
import { Timestamp } from "../../../domain/Time.js"
import { Corrupt, Fenced, RunSealed } from "../../../errors/StoreError.js"

/** One stored record: its position, what the indexes need, and the bytes it was hashed over. */
export interface Row {
  readonly seq: number
  readonly kind: Journal.KindTag
  readonly effectKey: Option.Option<EffectKey>
  readonly case: Option.Option<CaseId>
  readonly prevHash: Digest.Digest
  readonly hash: Digest.Digest
  readonly raw: Uint8Array
  /** Kept only by a verbatim import; `append` writes unsigned records. */
  readonly attestation?: Option.Option<Journal.Attestation>
}

export interface LeaseRow {
  /** `""` once released: the row keeps its epoch, so the next acquire goes higher. */
  readonly owner: string
  readonly epoch: number
  readonly expiresAt: number
}

/** A run's seal; its log position is its leaf's place in the tenant's log (`Sequenced`). */
export interface Seal {
  readonly outcome: Journal.RunOutcome
  readonly chainHead: Digest.Digest
  readonly logPosition: number
  readonly sealedAt: number
}

export interface Tables {
  /** Each run's chain, in seq order from 1. */
  readonly journal: Map<RunId, Array<Row>>
  readonly leases: Map<RunId, LeaseRow>
  readonly seals: Map<RunId, Seal>
  /** The latest conclusion of each run; the ordinal rises with every conclusion. */
  readonly outcomes: Map<RunId, { readonly outcome: Journal.RunOutcome; readonly ordinal: number }>
  /** By idempotency key. */
  readonly admissions: Map<string, { readonly run: RunId; readonly admittedAt: number }>
  readonly activity: Map<RunId, { readonly updatedAt: number; readonly case: Option.Option<CaseId> }>
  readonly cancels: Map<RunId, { readonly actor: string; readonly reason: string; readonly requestedAt: number }>
}

/** What a write of `batch` to `run` can change, to put back if a write alongside it fails. */
export interface Snapshot {
  readonly journal: Array<Row> | undefined
  readonly lease: LeaseRow | undefined
  readonly seal: Seal | undefined
  readonly outcome: { readonly outcome: Journal.RunOutcome; readonly ordinal: number } | undefined
  readonly activity: { readonly updatedAt: number; readonly case: Option.Option<CaseId> } | undefined
  readonly admissions: ReadonlyArray<
    readonly [string, { readonly run: RunId; readonly admittedAt: number } | undefined]
  >
}

// Rows are replaced, never mutated (an append sets a new chain array), so keeping references is a snapshot.
export const snapshot = (t: Tables, run: RunId, batch: ReadonlyArray<Journal.Append>): Snapshot => ({
  journal: t.journal.get(run),
  lease: t.leases.get(run),
  seal: t.seals.get(run),
  outcome: t.outcomes.get(run),
  activity: t.activity.get(run),
  admissions: batch.flatMap((a) =>
    a.kind.kind === "RunAdmitted" && a.kind.idempotency_key !== undefined
      ? [[a.kind.idempotency_key, t.admissions.get(a.kind.idempotency_key)] as const]
      : [],
  ),
})

export const restore = (t: Tables, run: RunId, s: Snapshot): void => {
  const put = <K, V>(m: Map<K, V>, k: K, v: V | undefined) => (v === undefined ? m.delete(k) : m.set(k, v))
  put(t.journal, run, s.journal)
  put(t.leases, run, s.lease)
  put(t.seals, run, s.seal)
  put(t.outcomes, run, s.outcome)
  put(t.activity, run, s.activity)
  for (const [key, held] of s.admissions) put(t.admissions, key, held)
}

export const nowSecs = (clock: Clock.Clock): number => Math.floor(clock.unsafeCurrentTimeMillis() / 1000)

// TTLs are whole seconds >= 1; a fractional or smaller one is taken as the nearest whole second >= 1.
export const wholeTtl = (ttl: number): number => (Number.isFinite(ttl) ? Math.max(1, Math.floor(ttl)) : 1)

/**
 * What append and seal both require: the run is not sealed (whatever the epoch), and `epoch` is
 * its current lease epoch. Only a newer acquire fences a writer: neither the lapse of its TTL
 * nor its own release does.
 */
export const mustHold = (tables: Tables, run: RunId, epoch: number): RunSealed | Fenced | undefined => {
  const sealed = tables.seals.get(run)
  if (sealed !== undefined) return new RunSealed({ run, outcome: sealed.outcome })
  const current = tables.leases.get(run)?.epoch ?? 0
  if (current !== epoch) return new Fenced({ run, held: epoch, current })
  return undefined
}

export const headOf = (chain: ReadonlyArray<Row>): Journal.Head => {
  const last = chain[chain.length - 1]
  return last === undefined ? { seq: 0, hash: Digest.ZERO } : { seq: last.seq, hash: last.hash }
}

export const toLease = (run: RunId, lease: LeaseRow): Journal.Lease =>
  new Journal.Lease({
    run,
    owner: lease.owner,
    epoch: Epoch.make(lease.epoch),
    expiresAt: Timestamp.make(lease.expiresAt),
  })

/** A stored row → a fresh record, decoded from the bytes it was hashed over, exactly as `read` returns it. */
export const toRecord = (run: RunId, row: Row): Either.Either<Journal.Record, Corrupt> => {
  const body = Journal.parseBody(row.raw)
  if (Either.isLeft(body)) return Either.left(new Corrupt({ detail: `journal: ${body.left}`, seq: row.seq }))
  if (body.right.run !== run || body.right.seq !== row.seq) {
    return Either.left(new Corrupt({ detail: "journal: body names another run or seq", seq: row.seq }))
  }
  // Every field is decoded already (the body by `parseBody`, the digests when the row was
  // written), so the class's own validation would decode the record a second time: a third of a
  // wake-up's CPU on this backend. The SQL stores skip it for the same reason.
  return Either.right(
    new Journal.Record(
      {
        ...body.right,
        prevHash: row.prevHash,
        hash: row.hash,
        attestation: row.attestation ?? Option.none(),
        raw: Buffer.from(row.raw),
      },
      true,
    ),
  )
}
