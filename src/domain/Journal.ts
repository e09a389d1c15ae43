/**
 * The journal (§6): per run, append-only and hash-chained. A record is hashed over the exact
 * canonical bytes it was written with, and those bytes, not a re-serialisation, are what a
 * reader verifies.
 */
import { Either, Option, Schema, SchemaAST } from "effect"
import * as Canonical from "./Canonical.js"
import { chain as chainDigest, Digest } from "./Digest.js"
import { EffectKey } from "./EffectKey.js"
import { CaseId, Epoch, RunId, Seq, StepId } from "./Ids.js"
import { Json } from "./Json.js"
import { Phase } from "./Phase.js"
import { Timestamp } from "./Time.js"

/** The largest canonical body a record may have: 1 MiB. */
export const MAX_RECORD_BYTES = 1_048_576

/** How a run concluded (§7.11); succeeded, quarantined, cancelled, compensated and swept runs are sealed, failed and exhausted stay open. */
export const RunOutcome = Schema.Literal(
  "succeeded",
  "failed",
  "quarantined",
  "cancelled",
  "compensated",
  "exhausted",
  "swept",
)
export type RunOutcome = typeof RunOutcome.Type

/** What a sweep did to its subject. */
export const SweepAction = Schema.Literal(
  "deadline_warned",
  "deadline_breached",
  "case_escalated",
  "task_expired",
  "task_escalated",
  "run_recovered",
)
export type SweepAction = typeof SweepAction.Type

const kind = <const K extends string, F extends Schema.Struct.Fields>(tag: K, fields: F) =>
  Schema.Struct({ kind: Schema.Literal(tag), ...fields })

const Count = Schema.NonNegativeInt

export const GovernedBy = Schema.Struct({
  name: Schema.String,
  version: Schema.String,
  digest: Schema.String,
  publisher: Schema.String,
})

export const RunAdmitted = kind("RunAdmitted", {
  capability: Schema.String,
  /**
   * The version the definition declared when it admitted the run (§7.13), and the digest of its
   * registered shape (`RunDefinition.shapeDigest`); optional, so journals written before they
   * were recorded still decode (their raw bytes never change).
   */
  definition_version: Schema.optional(Schema.String),
  definition_digest: Schema.optional(Schema.String),
  governed_by: Schema.optional(GovernedBy),
  input: Json,
  input_label: Schema.String,
  policy_bundle: Schema.String,
  canon: Count,
  idempotency_key: Schema.optional(Schema.String),
})
export const PlanFrozen = kind("PlanFrozen", { steps: Count, plan: Json })
export const StepStarted = kind("StepStarted", { skill: Schema.String })
export const StepFinished = kind("StepFinished", { outcome: Schema.String })
export const CaseBound = kind("CaseBound", { case_kind: Schema.String, opened: Schema.Boolean, correlation: Json })
export const DeadlineRegistered = kind("DeadlineRegistered", {
  name: Schema.String,
  resolved_at: Timestamp,
  calendar_digest: Digest,
})
export const DeadlineTransition = kind("DeadlineTransition", {
  name: Schema.String,
  from: Schema.String,
  to: Schema.String,
})
export const SuspendReason = Schema.Union(
  Schema.Struct({
    reason: Schema.Literal("awaiting_event"),
    kind: Schema.String,
    correlation: Json,
    until: Schema.NullOr(Timestamp),
  }),
  Schema.Struct({ reason: Schema.Literal("awaiting_time"), until: Timestamp }),
)
export const RunSuspended = kind("RunSuspended", { reason: SuspendReason })
export const Note = kind("Note", { text: Schema.String })
export const EffectStarted = kind("EffectStarted", {
  descriptor: Json,
  recovery: Schema.String,
  mutates: Schema.Boolean,
  attempt: Count,
  backoff_ms: Count,
  outbound_label: Schema.String,
})
export const EffectDone = kind("EffectDone", { output: Json, source: Schema.String, spend: Json, declared: Json })
export const EffectFailed = kind("EffectFailed", {
  error: Json,
  spend: Json,
  disposition: Schema.String,
  permanent: Schema.Boolean,
})
export const EffectReconciled = kind("EffectReconciled", {
  disposition: Schema.String,
  output: Json,
  spend: Json,
  detail: Schema.String,
  declared: Json,
})
export const BudgetRefused = kind("BudgetRefused", { limit: Json, used: Json })
export const BudgetReadmitted = kind("BudgetReadmitted", { limit: Json })
export const GroupOpened = kind("GroupOpened", { group: Schema.String, resources: Json })
export const GroupSettled = kind("GroupSettled", { group: Schema.String, outcome: Schema.String, detail: Json })
export const StepCompensated = kind("StepCompensated", { compensation: Json, outcome: Schema.String })
export const RunCancelled = kind("RunCancelled", { actor: Schema.String, reason: Schema.String })
export const RunSealed = kind("RunSealed", {
  outcome: RunOutcome,
  reason: Schema.optional(Schema.String),
  chain_head: Digest,
})
/**
 * A versioning marker's answer (§7.13, `cx.patched`): whether the run takes the changed path at
 * marker `id`. Keyed by the marker's place (`Patches.keyOf`), so a replay reads it back instead of
 * deciding again.
 */
export const Patched = kind("Patched", { id: Schema.String, value: Schema.Boolean })
export const Swept = kind("Swept", { subject: Schema.String, action: SweepAction, detail: Json })
// Reserved for later capabilities; listed so a record of these kinds reads back rather than failing.
export const IdentityBound = kind("IdentityBound", { chain: Json })
export const PolicyDenied = kind("PolicyDenied", {
  reason: Schema.String,
  action: Schema.String,
  resource: Schema.String,
})
export const Released = kind("Released", {
  releaser: Schema.String,
  release: Schema.String,
  labels: Json,
  value_digest: Schema.String,
})
export const BreakGlass = kind("BreakGlass", { actor: Schema.String, roles: Json, reason: Schema.String })

/** The payload of a record, tagged by `kind` in PascalCase, fields in snake_case. */
export const Kind = Schema.Union(
  RunAdmitted,
  PlanFrozen,
  StepStarted,
  StepFinished,
  CaseBound,
  DeadlineRegistered,
  DeadlineTransition,
  RunSuspended,
  Note,
  EffectStarted,
  EffectDone,
  EffectFailed,
  EffectReconciled,
  BudgetRefused,
  BudgetReadmitted,
  GroupOpened,
  GroupSettled,
  StepCompensated,
  RunCancelled,
  RunSealed,
  Swept,
  Patched,
  IdentityBound,
  PolicyDenied,
  Released,
  BreakGlass,
)
export type Kind = typeof Kind.Type
export type KindTag = Kind["kind"]

/** What a writer offers: the store assigns run, seq and the hashes. */
export class Append extends Schema.Class<Append>("Append")({
  case: Schema.OptionFromSelf(CaseId),
  step: StepId,
  phase: Schema.optionalWith(Phase, { default: () => "forward" }),
  effectKey: Schema.OptionFromSelf(EffectKey),
  kind: Kind,
}) {}

/**
 * An append the runtime built from typed parts, taken as it is. Its fields are typed by
 * construction, and what a step supplied (arguments, outputs, payloads) was checked as JSON where
 * it entered; the class's validation would only repeat that. It is not free to repeat: Effect's
 * class constructor derives the schema's type AST and compiles a parser for it on every call, so
 * validating the kind union (of 25 kinds, when measured) was a tenth of a run's allocation. What
 * comes from outside (a stored body, an archive) is decoded, never built here.
 */
export const built = (fields: ConstructorParameters<typeof Append>[0]): Append => {
  const append = new Append(fields, true)
  asBuilt.add(append)
  return append
}

const asBuilt = new WeakSet<Append>()

/** An optional signature over a record's `hash`. */
export class Attestation extends Schema.Class<Attestation>("Attestation")({
  keyId: Schema.String,
  signature: Schema.String,
}) {}

/** A stored record; `raw` is the canonical body it was written with and `hash = SHA-256(prevHash ‖ raw)`. */
export class Record extends Schema.Class<Record>("JournalRecord")({
  run: RunId,
  seq: Seq,
  case: Schema.OptionFromSelf(CaseId),
  step: StepId,
  phase: Phase,
  effectKey: Schema.OptionFromSelf(EffectKey),
  kind: Kind,
  prevHash: Digest,
  hash: Digest,
  attestation: Schema.OptionFromSelf(Attestation),
  raw: Schema.Uint8ArrayFromSelf,
}) {}

/** Ownership of a run: live while the backend's `now < expiresAt`; `epoch` fences every earlier holder. */
export class Lease extends Schema.Class<Lease>("Lease")({
  run: RunId,
  owner: Schema.String,
  epoch: Epoch,
  expiresAt: Timestamp,
}) {}

/** The last record of a run: `{0, ZERO}` for an unwritten run. */
export interface Head {
  readonly seq: number
  readonly hash: Digest
}

/** One row of the recent-activity index. */
export interface RecentRun {
  readonly run: RunId
  readonly updatedAt: Timestamp
  readonly case: Option.Option<CaseId>
}

/** The paging cursor of `recentRuns`: the last `(updatedAt, run)` seen. */
export interface Cursor {
  readonly updatedAt: Timestamp
  readonly run: RunId
}

/** A stored cancellation request. */
export interface Cancellation {
  readonly actor: string
  readonly reason: string
}

/** The fields of a body that are not the payload. */
export interface Position {
  readonly run: RunId
  readonly seq: Seq
  readonly case: Option.Option<CaseId>
  readonly step: StepId
  readonly phase: Phase
  readonly effectKey: Option.Option<EffectKey>
}

const encodeKind = Schema.encodeSync(Kind)

/**
 * What a field of a plain kind may hold, read off its schema: `leaf` (a primitive, a literal or
 * `Json`, refined or not: any value but `undefined`), `absent` (`undefined`, the other side of an
 * optional field), a struct of such fields, or a union of structs (with `absent` beside them).
 */
type Shape =
  | { readonly _tag: "leaf" }
  | { readonly _tag: "absent" }
  | { readonly _tag: "struct"; readonly fields: ReadonlyMap<string, Shape> }
  | { readonly _tag: "union"; readonly members: ReadonlyArray<Shape> }

const LEAF: Shape = { _tag: "leaf" }
const ABSENT: Shape = { _tag: "absent" }

/**
 * The shape of a schema's type side, or `undefined` when its encoding could differ from the value
 * in a way a walk cannot see: a struct with index signatures, a refined struct (its filter would
 * go unchecked), or a union of a struct with a leaf (the leaf would let any struct through).
 */
const shapeOf = (ast: SchemaAST.AST): Shape | undefined => {
  switch (ast._tag) {
    case "UndefinedKeyword":
      return ABSENT
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) return undefined
      const fields = new Map<string, Shape>()
      for (const field of ast.propertySignatures) {
        const shape = shapeOf(field.type)
        if (shape === undefined || typeof field.name !== "string") return undefined
        fields.set(field.name, shape)
      }
      return { _tag: "struct", fields }
    }
    case "Union": {
      const members: Array<Shape> = []
      for (const type of ast.types) {
        const shape = shapeOf(type)
        if (shape === undefined) return undefined
        members.push(shape)
      }
      if (members.every((m) => m._tag === "leaf" || m._tag === "absent")) return LEAF
      return members.some((m) => m._tag === "leaf") ? undefined : { _tag: "union", members }
    }
    case "Refinement": {
      const from = shapeOf(ast.from)
      return from?._tag === "leaf" ? LEAF : undefined
    }
    default:
      return LEAF
  }
}

/**
 * Whether `value` is its own encoding under `shape`: every struct holds only fields its schema
 * names, none of them `undefined`, each matching its own shape (a union: one of its members).
 * Encoding such a value only checks it and drops fields outside the schema, and there are none.
 */
const fits = (shape: Shape, value: unknown): boolean => {
  switch (shape._tag) {
    case "leaf":
      return value !== undefined
    case "absent":
      return false
    case "union":
      return shape.members.some((m) => fits(m, value))
    case "struct": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return false
      for (const key in value) {
        const field = shape.fields.get(key)
        if (field === undefined || !fits(field, (value as { readonly [k: string]: unknown })[key])) return false
      }
      return true
    }
  }
}

/**
 * Per kind, its shape, for the plain kinds: the schema is its own type side (nothing transforms),
 * so a payload that fits it is its own encoding. All 26 kinds are plain today; a kind that is not
 * (a transformation, a refined struct) is encoded through its schema and parsed back instead.
 */
const plainKinds: ReadonlyMap<string, Shape> = new Map(
  Kind.members.flatMap((member) => {
    const shape = SchemaAST.typeAST(member.ast) === member.ast ? shapeOf(member.ast) : undefined
    return shape?._tag === "struct" ? [[member.fields.kind.literals[0], shape] as const] : []
  }),
)

/**
 * A payload that is its own encoding, else `undefined`: a plain kind's that fits its shape.
 * Decoding its canonical text gives it back, so the store need not.
 */
const selfEncoded = (payload: Kind): Kind | undefined => {
  const shape = plainKinds.get(payload.kind)
  return shape !== undefined && fits(shape, payload) ? payload : undefined
}

const header = (at: Position) => ({
  run: at.run,
  seq: at.seq,
  case: Option.getOrNull(at.case),
  step: at.step,
  phase: at.phase,
  effect_key: Option.getOrNull(at.effectKey),
})

/** The JSON body `{run, seq, case, step, phase, effect_key, kind…}` of a record. */
export const bodyJson = (at: Position, payload: Kind): Json => ({
  ...header(at),
  ...(encodeKind(payload) as { readonly [key: string]: Json }),
})

/** The canonical text (RFC 8785) of a record's body, whose UTF-8 bytes are what `hash` commits to. */
export const bodyText = (record: Position & { readonly kind: Kind }): string =>
  Canonical.text(bodyJson(record, record.kind))

/** The canonical bytes (RFC 8785) of a record's body: what `hash` commits to. */
export const body = (record: Position & { readonly kind: Kind }): Uint8Array => Buffer.from(bodyText(record), "utf8")

/** An append's body at one position, and its hash after one predecessor, as `encoded` made them. */
export interface Encoded {
  readonly run: RunId
  readonly seq: Seq
  readonly text: string
  readonly raw: Buffer
  /** The payload as `read` decodes it, when known without decoding: a built append's that is its own encoding. */
  readonly kind: Kind | undefined
  /** The predecessor `hash` was chained on, and the result (one memo: a batch is chained once). */
  prev: Digest | undefined
  hash: Digest | undefined
}

const encodings = new WeakMap<Append, Encoded>()

/**
 * The body of `append` as record `run`/`seq`, encoded once per append: a wake-up's answer is
 * encoded when it is staged, again when the writer computes the head its conclusion names, and
 * again by the store that writes it, all at the same position. A memo keyed by the append (an
 * immutable value), so a different position encodes afresh.
 */
export const encoded = (append: Append, run: RunId, seq: Seq): Encoded => {
  const hit = encodings.get(append)
  if (hit !== undefined && hit.run === run && hit.seq === seq) return hit
  // A built append's payload is typed and its JSON values were checked where they entered, so
  // when it is its own encoding it goes into the body as it is, neither encoded nor decoded back.
  const plain = asBuilt.has(append) ? selfEncoded(append.kind) : undefined
  const at = { ...append, run, seq }
  const text =
    plain === undefined
      ? bodyText(at)
      : Canonical.text({ ...header(at), ...(plain as { readonly [key: string]: Json }) })
  const made: Encoded = {
    run,
    seq,
    text,
    raw: Buffer.from(text, "utf8"),
    kind: plain,
    prev: undefined,
    hash: undefined,
  }
  encodings.set(append, made)
  return made
}

/** `SHA-256(prev ‖ raw)` of an encoded body, computed once for the same predecessor. */
export const chained = (body: Encoded, prev: Digest): Digest => {
  if (body.prev === prev && body.hash !== undefined) return body.hash
  const hash = chainDigest(prev, body.raw)
  body.prev = prev
  body.hash = hash
  return hash
}

const Header = Schema.Struct({
  run: RunId,
  seq: Seq,
  case: Schema.NullOr(CaseId),
  step: StepId,
  phase: Phase,
  effect_key: Schema.NullOr(EffectKey),
})

// Built once: a wake-up decodes every record of its run's journal.
const decodeHeader = Schema.decodeUnknownEither(Header)
const decodeKind = Schema.decodeUnknownEither(Kind)

const parseJson = (text: string): Either.Either<unknown, string> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (e) {
    return Either.left(`body is not JSON: ${String(e)}`)
  }
}

/**
 * The payload of a body's text, decoded as `parseBody` decodes it: a store reads back what it
 * has just encoded, whose position it knows already, so only the payload needs the decoder.
 */
export const parseKindText = (text: string): Either.Either<Kind, string> =>
  Either.flatMap(parseJson(text), (value) => Either.mapLeft(decodeKind(value), (e) => `body payload: ${e.message}`))

/** Reads a stored body back into its position and payload; anything that does not decode is `Left`. */
export const parseBody = (raw: Uint8Array): Either.Either<Position & { readonly kind: Kind }, string> => {
  // A view of the bytes, not a copy: only decoded here.
  const value = parseJson(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("utf8"))
  if (Either.isLeft(value)) return Either.left(value.left)
  const header = decodeHeader(value.right)
  if (Either.isLeft(header)) return Either.left(`body header: ${header.left.message}`)
  const payload = decodeKind(value.right)
  if (Either.isLeft(payload)) return Either.left(`body payload: ${payload.left.message}`)
  const h = header.right
  return Either.right({
    run: h.run,
    seq: h.seq,
    case: Option.fromNullable(h.case),
    step: h.step,
    phase: h.phase,
    effectKey: Option.fromNullable(h.effect_key),
    kind: payload.right,
  })
}

/**
 * A record as an export carries it, to be written back verbatim (§9.3): the bytes it was hashed
 * over, its hashes and its attestation. The store derives everything else from `raw`.
 */
export interface Verbatim {
  readonly run: RunId
  readonly seq: Seq
  readonly prevHash: Digest
  readonly hash: Digest
  readonly raw: Uint8Array
  readonly attestation: Option.Option<Attestation>
}

/** A run to seal after an import, at its head, as `seal` would have. */
export interface ImportSeal {
  readonly run: RunId
  readonly outcome: RunOutcome
}

/**
 * Whether `record` continues a chain whose head is `head`, checked from its bytes alone: the next
 * seq, the head's hash as `prevHash`, `hash = SHA-256(prevHash ‖ raw)`, `raw` within the limit and
 * a body that decodes and names the record's run and seq. The decoded body, or why not.
 */
export const checkVerbatim = (
  record: Verbatim,
  head: Head,
): Either.Either<Position & { readonly kind: Kind }, string> => {
  const broken = continues(record, head)
  if (broken !== undefined) return Either.left(broken)
  const body = parseBody(record.raw)
  if (Either.isLeft(body)) return body
  if (body.right.run !== record.run || body.right.seq !== record.seq)
    return Either.left(`the body names ${body.right.run}/${body.right.seq}`)
  return body
}

/** The chain half of `checkVerbatim`, for a record whose body is already decoded: why it does not continue `head`, or nothing. */
export const continues = (record: Verbatim, head: Head): string | undefined => {
  if (record.seq !== head.seq + 1) return `seq ${record.seq} does not follow ${head.seq}`
  if (record.prevHash !== head.hash) return "prev_hash is not the hash of the record before"
  if (record.raw.length > MAX_RECORD_BYTES)
    return `raw is ${record.raw.length} bytes, over the ${MAX_RECORD_BYTES}-byte limit`
  if (chainDigest(record.prevHash, record.raw) !== record.hash)
    return "hash is not SHA-256(prev_hash ‖ raw): the bytes were changed"
  return undefined
}
