/**
 * The journal store's pure helpers: the records a batch makes on a head with the rows they are
 * written as, which effect start a unique violation refused, and what a batch stamps or indexes.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Option } from "effect"
import { type RunId, Seq } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { type Corrupt, DuplicateEffect, RecordTooLarge } from "../../errors/StoreError.js"
import { digestParam } from "../internal/Columns.js"
import { type Built, corruptAt } from "../internal/JournalRows.js"

/** The records `batch` makes on top of `head`, with the row each is written as. */
export const build = (
  run: RunId,
  head: Journal.Head,
  batch: ReadonlyArray<Journal.Append>,
): Effect.Effect<ReadonlyArray<Built>, RecordTooLarge | Corrupt> => {
  const built: Array<Built> = []
  let prev = digestParam(head.hash)
  for (const entry of batch) {
    const seq = Seq.make(head.seq + 1)
    const encoded = Journal.encoded(entry, run, seq)
    const raw = encoded.raw
    if (raw.length > Journal.MAX_RECORD_BYTES)
      return Effect.fail(new RecordTooLarge({ bytes: raw.length, limit: Journal.MAX_RECORD_BYTES }))
    const hash = Journal.chained(encoded, head.hash)
    // Decoded back from the text just written, so append returns exactly what `read` will
    // (a payload the encoding changes, an undefined field say, reads back as stored), unless
    // the encoding knows the payload is its own encoding.
    const kind = encoded.kind !== undefined ? Either.right(encoded.kind) : Journal.parseKindText(encoded.text)
    if (Either.isLeft(kind)) return Effect.fail(corruptAt(seq, kind.left))
    const record = new Journal.Record(
      {
        run,
        seq,
        case: entry.case,
        step: entry.step,
        phase: entry.phase,
        effectKey: entry.effectKey,
        kind: kind.right,
        prevHash: head.hash,
        hash,
        attestation: Option.none(),
        raw,
      },
      true,
    )
    const param = digestParam(hash)
    const row = [
      seq,
      entry.kind.kind,
      Option.getOrNull(entry.effectKey),
      Option.getOrNull(entry.case),
      prev,
      param,
      raw,
    ]
    built.push({ record, row })
    head = { seq, hash }
    prev = param
  }
  return Effect.succeed(built)
}

/** The partial unique index `journal_effect_started` is the exactly-once arbiter: which start it refused. */
export const duplicateOf =
  (run: RunId, batch: ReadonlyArray<Journal.Append>) =>
  (e: SqlError): Effect.Effect<never, DuplicateEffect | SqlError> => {
    const starts = batch.flatMap((a) =>
      a.kind.kind === "EffectStarted" && Option.isSome(a.effectKey) ? [a.effectKey.value] : [],
    )
    // pg names the refused key in the error's detail; with one start in the batch it is that one.
    const detail = String((e.cause as { detail?: unknown } | undefined)?.detail ?? "")
    const effect = starts.find((k) => detail.includes(k)) ?? (starts.length === 1 ? starts[0] : undefined)
    return effect === undefined ? Effect.fail(e) : Effect.fail(new DuplicateEffect({ run, effect }))
  }

/**
 * pg: one batch statement of `built` from its record `at`, on a head at `seq`; whole when it
 * wrote every record of the chunk and touched the activity row. A batch longer than
 * WRITE_CHUNK goes in statements of that many records, each checking the head the one before
 * it left (see WRITE_CHUNK).

/** The case the batch stamps the run's activity with: its last record's that names one. */
export const lastCaseOf = (batch: ReadonlyArray<Journal.Append>): string | null => {
  for (let i = batch.length - 1; i >= 0; i--) {
    const c = batch[i]?.case
    if (c !== undefined && Option.isSome(c)) return c.value
  }
  return null
}

/**
 * The outcome `runsByOutcome` lists a sealed run under: its last batch's last conclusion record's
 * (the last conclusion wins), else the seal's own, so a bare seal (the sweeper's evidence runs
 * seal `swept` with no record) is listed too.
 */
export const indexedAs = (
  last: ReadonlyArray<Journal.Append> | undefined,
  outcome: Journal.RunOutcome,
): Journal.RunOutcome => {
  for (let i = (last?.length ?? 0) - 1; i >= 0; i--) {
    const kind = last?.[i]?.kind
    if (kind?.kind === "RunSealed") return kind.outcome
  }
  return outcome
}

/** A record whose admission key `appendWithin` claims in the same transaction. */
export const isKeyedAdmission = (a: Journal.Append) =>
  a.kind.kind === "RunAdmitted" && a.kind.idempotency_key !== undefined

/**
 * pg: records per batch statement. The protocol counts a statement's parameters in 16 bits
 * (65,535), and a record takes 7 besides the statement's 5: a run that staged 10,001 records
 * (the replay bench's longest) sent 70,012, which pg read as 4,476 and refused ("bind message has
 * 4476 parameter formats but 1 parameters"). 1,000 records are 7,005 parameters.
 */
export const WRITE_CHUNK = 1000

// Runs per lease upsert of `acquireMany`: 5 parameters each, far under both dialects' limits.
export const ACQUIRE_CHUNK = 500

// Rows per multi-row insert of an import: 12 parameters each, far under both dialects' limits.
export const IMPORT_CHUNK = 200

// TTLs are whole seconds >= 1; a fractional or smaller one is taken as the nearest whole second >= 1.
export const wholeTtl = (ttl: number): number => (Number.isFinite(ttl) ? Math.max(1, Math.floor(ttl)) : 1)
