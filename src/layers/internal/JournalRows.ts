/**
 * The journal tables' rows as the SQL journal store reads them, and the records they decode to:
 * each row shape a statement answers with, and the one way a stored journal row becomes a
 * `Journal.Record` (its digests checked, its body decoded from the bytes it was hashed over).
 */
import { Effect, Either, Exit, Option, Schema } from "effect"
import * as Digest from "../../domain/Digest.js"
import { CaseId, RunId } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { Timestamp } from "../../domain/Time.js"
import { Corrupt } from "../../errors/StoreError.js"
import { Int8 } from "./Columns.js"

/** The columns a record is read back from, in `JournalRow`'s order. */
export const RECORD_COLUMNS = "run_id, seq, prev_hash, hash, raw, key_id, signature"

export const JournalRow = Schema.Struct({
  run_id: Schema.String,
  seq: Int8,
  prev_hash: Schema.Uint8ArrayFromSelf,
  hash: Schema.Uint8ArrayFromSelf,
  raw: Schema.Uint8ArrayFromSelf,
  key_id: Schema.NullOr(Schema.String),
  signature: Schema.NullOr(Schema.String),
})
export type JournalRow = typeof JournalRow.Type

export const EpochRow = Schema.Struct({ epoch: Int8 })
export const StateRow = Schema.Struct({
  epoch: Schema.NullOr(Int8),
  sealed: Schema.NullOr(Journal.RunOutcome),
  head_seq: Schema.NullOr(Int8),
  head_hash: Schema.NullOr(Schema.Uint8ArrayFromSelf),
})
export const WrittenRow = Schema.Struct({ written: Int8, touched: Int8 })
export const ReasonRow = Schema.Struct({ reason: Schema.String })
export const OpenedRow = Schema.Struct({ ok: Int8, claimed: Int8, leased: Int8, written: Int8, touched: Int8 })

export const SealRow = Schema.Struct({ outcome: Journal.RunOutcome })
export const SealedRow = Schema.Struct({ run_id: RunId, indexed: Int8 })
/** The log position a seal took (`LogSequence`). */
export const PositionRow = Schema.Struct({ position: Int8 })
export const SealedWithRow = Schema.Struct({
  written: Int8,
  touched: Int8,
  released: Int8,
  indexed: Int8,
  sealed: Int8,
})
export const HeadRow = Schema.Struct({ seq: Int8, hash: Schema.Uint8ArrayFromSelf })
export const LeaseRow = Schema.Struct({ owner: Schema.String, epoch: Int8, expires_at: Int8 })
export type LeaseRow = typeof LeaseRow.Type
export const GrantedRow = Schema.Struct({ run_id: RunId, owner: Schema.String, epoch: Int8, expires_at: Int8 })
export const HeldRow = Schema.Struct({ owner: Schema.String, epoch: Int8, expires_at: Int8, now: Int8 })
export const RunRow = Schema.Struct({ run_id: RunId })
export const ActivityRow = Schema.Struct({
  run_id: RunId,
  updated_at: Schema.compose(Int8, Timestamp),
  case_id: Schema.NullOr(CaseId),
})
export const CancelRow = Schema.Struct({ actor: Schema.String, reason: Schema.String })

/** A record `build` made: the record `append` answers and the row written for it. */
export interface Built {
  readonly record: Journal.Record
  readonly row: ReadonlyArray<unknown>
}

/** Journal damage names its seq (0 when the seq itself is unreadable). */
export const corruptAt = (seq: number, detail: string) =>
  new Corrupt({ detail: `journal: ${detail}`, seq: Number.isSafeInteger(seq) && seq > 0 ? seq : 0 })

export const digestAt = (bytes: Uint8Array, seq: number, column: string) =>
  Either.match(Digest.fromBytes(bytes), {
    onLeft: (detail) => Effect.fail(corruptAt(seq, `${column}: ${detail}`)),
    onRight: Effect.succeed,
  })

/** `toRecord` of every row, in one step: a wake-up reads its run's whole journal. */
export const toRecords = (rows: ReadonlyArray<JournalRow>): Effect.Effect<ReadonlyArray<Journal.Record>, Corrupt> => {
  const records: Array<Journal.Record> = []
  for (const row of rows) {
    const record = toRecord(row)
    if (Exit.isFailure(record)) return Exit.failCause(record.cause)
    records.push(record.value)
  }
  return Exit.succeed(records)
}

/** A stored row → record: the body is decoded from `raw` and must name the row's run and seq. */
export const toRecord = (row: JournalRow): Exit.Exit<Journal.Record, Corrupt> => {
  const prevHash = Digest.fromBytes(row.prev_hash)
  if (Either.isLeft(prevHash)) return Exit.fail(corruptAt(row.seq, `prev_hash: ${prevHash.left}`))
  const hash = Digest.fromBytes(row.hash)
  if (Either.isLeft(hash)) return Exit.fail(corruptAt(row.seq, `hash: ${hash.left}`))
  const body = Journal.parseBody(row.raw)
  if (Either.isLeft(body)) return Exit.fail(corruptAt(row.seq, body.left))
  const b = body.right
  if (b.run !== row.run_id || b.seq !== row.seq) return Exit.fail(corruptAt(row.seq, "body names another run or seq"))
  const attestation =
    row.key_id !== null && row.signature !== null
      ? Option.some(new Journal.Attestation({ keyId: row.key_id, signature: row.signature }))
      : Option.none()
  // Every field is decoded already (the columns by their schemas, the body by `parseBody`), so
  // the class's own validation would decode the record a second time: on a wake-up's journal
  // read it was a tenth of the CPU. Both drivers hand `raw` over as a Buffer of its own.
  const raw = Buffer.isBuffer(row.raw) ? row.raw : Buffer.from(row.raw)
  return Exit.succeed(new Journal.Record({ ...b, prevHash: prevHash.right, hash: hash.right, attestation, raw }, true))
}
