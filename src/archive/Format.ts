/**
 * The export format (§9.2), version 1: JSON Lines, one object per line tagged by `kind`. A
 * header, the log's leaves when the header carries a checkpoint, the run records (runs in id
 * order, records by seq), the cases in id order, and a trailer with the counts and the runs that
 * could not be read. Every line is written as its canonical JSON (RFC 8785), so one tenant's
 * history always exports to the same bytes, and two exports can be compared with `cmp`. Fields
 * are snake_case like the record bodies, times are RFC 3339 UTC (§3), absences `null`.
 *
 * Decision, the transparency log (§6.5) in an export: the header's `checkpoint` is the tenant's
 * latest signed checkpoint note, exactly as the log served it, and a leaf line follows the header
 * for every position below its size, in position order, each the leaf's fields. With every leaf
 * the export needs no proofs: `verify` hashes the leaves to the checkpoint's root, and to any
 * kept checkpoint's root at its smaller size. An export without a checkpoint (a tenant whose log
 * was never integrated, or an export made before the log) has no leaf lines and stays version 1:
 * the lines are additions a reader of either kind accounts for.
 */
import { Either, Option, ParseResult, Schema } from "effect"
import * as Canonical from "../domain/Canonical.js"
import { Case, CaseStatus } from "../domain/Case.js"
import { Deadline, DeadlineState } from "../domain/Deadline.js"
import { Digest } from "../domain/Digest.js"
import { CaseId, CaseVersion, RunId, Seq } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { Json } from "../domain/Json.js"
import { LogLeaf } from "../domain/LogLeaf.js"
import { TenantId } from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"

export const FORMAT = 1

export const HEADER = "agentplane.export.header"
export const RECORD = "agentplane.export.record"
export const CASE = "agentplane.export.case"
export const END = "agentplane.export.end"
export const LEAF = "agentplane.export.leaf"

/** RFC 3339 UTC in whole seconds, exactly as `Time.toRfc3339` writes it, so decoding and re-encoding give the same text. */
export const Instant = Schema.transformOrFail(Schema.String, Schema.typeSchema(Time.Timestamp), {
  strict: true,
  decode: (text, _, ast) => {
    const millis = Date.parse(text)
    return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(text) && Number.isFinite(millis)
      ? ParseResult.succeed(Time.fromMillis(millis))
      : ParseResult.fail(new ParseResult.Type(ast, text, "expected an RFC 3339 UTC instant in whole seconds"))
  },
  encode: (at) => ParseResult.succeed(Time.toRfc3339(at)),
})

/** Base64 as Node writes it, and only that: a lenient decoder would skip a flipped character instead of refusing it. */
export const Base64 = Schema.transformOrFail(Schema.String, Schema.Uint8ArrayFromSelf, {
  strict: true,
  decode: (text, _, ast) => {
    const bytes = Buffer.from(text, "base64")
    return bytes.toString("base64") === text
      ? ParseResult.succeed(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length))
      : ParseResult.fail(new ParseResult.Type(ast, text, "raw is not canonical base64"))
  },
  encode: (bytes) => ParseResult.succeed(Buffer.from(bytes).toString("base64")),
})

export const Header = Schema.Struct({
  kind: Schema.Literal(HEADER),
  format: Schema.Literal(FORMAT),
  canon: Schema.Literal(Canonical.CANON_VERSION),
  tenant: TenantId,
  /** The signed checkpoint note (C2SP `tlog-checkpoint` in a signed note) the leaves hash to. */
  checkpoint: Schema.optional(Schema.String),
})
export type Header = typeof Header.Type

/** The log's leaf at position `index`: the fields `LogLeaf` encodes, under the names it encodes them by. */
export const LeafLine = Schema.Struct({
  kind: Schema.Literal(LEAF),
  index: Schema.NonNegativeInt,
  run: RunId,
  chain_head: Digest,
  records: Schema.NonNegativeInt,
  outcome: Journal.RunOutcome,
})
export type LeafLine = typeof LeafLine.Type

export const RecordLine = Schema.Struct({
  kind: Schema.Literal(RECORD),
  run: RunId,
  seq: Seq,
  prev_hash: Digest,
  hash: Digest,
  raw: Base64,
  attestation: Schema.optional(Schema.Struct({ key_id: Schema.String, signature: Schema.String })),
})
export type RecordLine = typeof RecordLine.Type

const KeyLine = Schema.Struct({ namespace: Schema.String, value: Schema.String })

const CaseBody = Schema.Struct({
  id: CaseId,
  kind: Schema.String,
  status: CaseStatus,
  correlation: Schema.Array(KeyLine),
  state: Json,
  version: CaseVersion,
  opened_at: Instant,
  runs: Schema.Array(RunId),
})

const DeadlineLine = Schema.Struct({
  name: Schema.String,
  resolved_at: Instant,
  calendar_digest: Digest,
  warn_at: Schema.NullOr(Instant),
  state: DeadlineState,
})

export const CaseLine = Schema.Struct({
  kind: Schema.Literal(CASE),
  case: CaseBody,
  deadlines: Schema.Array(DeadlineLine),
  blobs: Schema.Array(Digest),
})
export type CaseLine = typeof CaseLine.Type

export const Unreadable = Schema.Struct({ run: RunId, seq: Schema.NonNegativeInt, detail: Schema.String })
export type Unreadable = typeof Unreadable.Type

export const End = Schema.Struct({
  kind: Schema.Literal(END),
  runs: Schema.NonNegativeInt,
  records: Schema.NonNegativeInt,
  cases: Schema.NonNegativeInt,
  unreadable: Schema.Array(Unreadable),
})
export type End = typeof End.Type

/** A case as the export carries it, in the shapes `importCase` takes. */
export interface CaseItem {
  readonly case: Case
  readonly deadlines: ReadonlyArray<Deadline>
  readonly blobs: ReadonlyArray<Digest>
}

// --- writing ---------------------------------------------------------------------------------

const line = (value: unknown): string => Canonical.text(value as Json)

export const headerLine = (tenant: TenantId, checkpoint?: string): string =>
  line(
    Schema.encodeSync(Header)({
      kind: HEADER,
      format: FORMAT,
      canon: Canonical.CANON_VERSION,
      tenant,
      ...(checkpoint === undefined ? {} : { checkpoint }),
    }),
  )

export const leafLine = (index: number, leaf: LogLeaf): string =>
  line({
    kind: LEAF,
    index,
    run: leaf.run,
    chain_head: leaf.chainHead,
    records: leaf.records,
    outcome: leaf.outcome,
  })

/**
 * A record's line, written directly in canonical order (RFC 8785 sorts keys by code unit:
 * attestation, hash, kind, prev_hash, raw, run, seq; strings and integers serialise as
 * `JSON.stringify` does): at a million records the general canonicaliser was a fifth of an
 * export's time. `recordLineCanonical` is the general form a test holds this one to.
 */
export const recordLine = (record: Journal.Verbatim): string => {
  const raw = Buffer.from(record.raw.buffer, record.raw.byteOffset, record.raw.byteLength).toString("base64")
  const rest = `"hash":"${record.hash}","kind":"${RECORD}","prev_hash":"${record.prevHash}","raw":"${raw}","run":${JSON.stringify(record.run)},"seq":${JSON.stringify(record.seq)}}`
  return Option.match(record.attestation, {
    onNone: () => `{${rest}`,
    onSome: (a) =>
      `{"attestation":{"key_id":${JSON.stringify(a.keyId)},"signature":${JSON.stringify(a.signature)}},${rest}`,
  })
}

/** `recordLine` through the general canonicaliser: the definition the direct form must equal. */
export const recordLineCanonical = (record: Journal.Verbatim): string =>
  line({
    kind: RECORD,
    run: record.run,
    seq: record.seq,
    prev_hash: record.prevHash,
    hash: record.hash,
    raw: Buffer.from(record.raw).toString("base64"),
    ...Option.match(record.attestation, {
      onNone: () => ({}),
      onSome: (a) => ({ attestation: { key_id: a.keyId, signature: a.signature } }),
    }),
  })

export const caseLine = (item: CaseItem): string =>
  line(
    Schema.encodeSync(CaseLine)({
      kind: CASE,
      case: {
        id: item.case.id,
        kind: item.case.kind,
        status: item.case.status,
        correlation: item.case.correlation.map((k) => ({ namespace: k.namespace, value: k.value })),
        state: item.case.state,
        version: item.case.version,
        opened_at: item.case.openedAt,
        runs: item.case.runs,
      },
      deadlines: item.deadlines.map((d) => ({
        name: d.name,
        resolved_at: d.resolvedAt,
        calendar_digest: d.calendarDigest,
        warn_at: Option.getOrNull(d.warnAt),
        state: d.state,
      })),
      blobs: item.blobs,
    }),
  )

export const endLine = (end: Omit<End, "kind">): string => line(Schema.encodeSync(End)({ kind: END, ...end }))

// --- reading ---------------------------------------------------------------------------------

/** A decoded line. */
export type Line =
  | { readonly _tag: "Header"; readonly header: Header }
  | { readonly _tag: "Leaf"; readonly index: number; readonly leaf: LogLeaf }
  | { readonly _tag: "Record"; readonly record: Journal.Verbatim }
  | { readonly _tag: "Case"; readonly item: CaseItem }
  | { readonly _tag: "End"; readonly end: End }

const decodeHeader = Schema.decodeUnknownEither(Header, { onExcessProperty: "error" })
const decodeRecord = Schema.decodeUnknownEither(RecordLine, { onExcessProperty: "error" })
const decodeCaseLine = Schema.decodeUnknownEither(CaseLine, { onExcessProperty: "error" })
const decodeEnd = Schema.decodeUnknownEither(End, { onExcessProperty: "error" })
const decodeLeaf = Schema.decodeUnknownEither(LeafLine, { onExcessProperty: "error" })
const decodeCase = Schema.decodeUnknownEither(Case)
const decodeDeadline = Schema.decodeUnknownEither(Deadline)

/**
 * One line's text → what it carries, or why it is not a line of this format. Unknown fields are
 * refused: a line this version cannot account for fully is not one it may restore.
 */
export const parse = (text: string): Either.Either<Line, string> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return Either.left("not a JSON line")
  }
  const kind = typeof value === "object" && value !== null ? (value as { kind?: unknown }).kind : undefined
  const failed = (e: ParseResult.ParseError) => Either.left(e.message.replace(/\s+/g, " "))
  switch (kind) {
    case HEADER:
      return Either.match(decodeHeader(value), {
        onLeft: failed,
        onRight: (header) => Either.right({ _tag: "Header", header }),
      })
    case LEAF:
      return Either.match(decodeLeaf(value), {
        onLeft: failed,
        onRight: (l) =>
          Either.right({
            _tag: "Leaf",
            index: l.index,
            leaf: new LogLeaf({ run: l.run, chainHead: l.chain_head, records: l.records, outcome: l.outcome }),
          }),
      })
    case RECORD:
      return Either.match(decodeRecord(value), {
        onLeft: failed,
        onRight: (r) =>
          Either.right({
            _tag: "Record",
            record: {
              run: r.run,
              seq: r.seq,
              prevHash: r.prev_hash,
              hash: r.hash,
              raw: r.raw,
              attestation: Option.map(
                Option.fromNullable(r.attestation),
                (a) => new Journal.Attestation({ keyId: a.key_id, signature: a.signature }),
              ),
            },
          }),
      })
    case CASE:
      return Either.flatMap(
        Either.match(decodeCaseLine(value), { onLeft: failed, onRight: (c) => Either.right(c) }),
        toCaseItem,
      )
    case END:
      return Either.match(decodeEnd(value), { onLeft: failed, onRight: (end) => Either.right({ _tag: "End", end }) })
    default:
      return Either.left(`unknown line kind ${JSON.stringify(kind)}`)
  }
}

const toCaseItem = (c: CaseLine): Either.Either<Line, string> => {
  const kase = decodeCase({
    id: c.case.id,
    kind: c.case.kind,
    status: c.case.status,
    correlation: c.case.correlation,
    state: c.case.state,
    version: c.case.version,
    openedAt: c.case.opened_at,
    runs: c.case.runs,
  })
  if (Either.isLeft(kase)) return Either.left(`case: ${kase.left.message.replace(/\s+/g, " ")}`)
  const deadlines: Array<Deadline> = []
  for (const d of c.deadlines) {
    const decoded = decodeDeadline({
      case: c.case.id,
      name: d.name,
      resolvedAt: d.resolved_at,
      calendarDigest: d.calendar_digest,
      warnAt: Option.fromNullable(d.warn_at),
      state: d.state,
    })
    if (Either.isLeft(decoded)) return Either.left(`deadline ${JSON.stringify(d.name)}: ${decoded.left.message}`)
    deadlines.push(decoded.right)
  }
  return Either.right({ _tag: "Case", item: { case: kase.right, deadlines, blobs: c.blobs } })
}
