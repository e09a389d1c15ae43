/**
 * The wire forms of the operator API (§8.2): what requests may carry and what responses show.
 * Times are RFC 3339 UTC on the wire (§3), absences are `null`, ids are shown prefixed. Request
 * bodies refuse unknown fields, so a body naming an actor or roles is a 422, never ignored.
 */
import { Either, Option, ParseResult, Schema } from "effect"
import { type Case, CaseStatus } from "../domain/Case.js"
import { CorrelationKey } from "../domain/CorrelationKey.js"
import { type Deadline, DeadlineState } from "../domain/Deadline.js"
import { Digest } from "../domain/Digest.js"
import { EffectKey } from "../domain/EffectKey.js"
import type { DeadLetter } from "../domain/Event.js"
import { type CaseId, CaseId as CaseIdSchema, CaseVersion, parseCaseId, RunId, Seq, StepId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import { Json } from "../domain/Json.js"
import { MAX_JSON_DEPTH, MAX_KEY_VALUE_BYTES, MAX_KEYS, MAX_NAME_BYTES } from "../domain/Limits.js"
import { Phase } from "../domain/Phase.js"
import * as Task from "../domain/Task.js"
import * as Text_ from "../domain/Text.js"
import * as Time from "../domain/Time.js"
import type * as Runtime from "../runtime/Runtime.js"
import * as PolicyDecision from "./PolicyDecision.js"
import * as TaskRefSchema from "./TaskRef.js"

// --- scalars ---------------------------------------------------------------------------------

/** Any JSON value; the domain schema is a declaration, which OpenAPI cannot describe on its own. */
export const AnyJson = Json.annotations({
  jsonSchema: {
    anyOf: [
      { type: "object" },
      { type: "array" },
      { type: "string" },
      { type: "number" },
      { type: "boolean" },
      { type: "null" },
    ],
  },
  description: `any JSON value, nested at most ${MAX_JSON_DEPTH} levels (counted from the request body)`,
})

/** A C0 or C1 control character (U+001F among them, which separates source and id in a dedup key). */
const isControl = (code: number): boolean => code < 0x20 || (code >= 0x7f && code <= 0x9f)

/** Tab, line feed and carriage return, which free text may hold. */
const isLayout = (code: number): boolean => code === 0x09 || code === 0x0a || code === 0x0d

const hasControl = (s: string, allowLayout: boolean): boolean => {
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i)
    if (isControl(code) && !(allowLayout && isLayout(code))) return true
  }
  return false
}

/** A non-empty name or id with no control character: event ids and kinds, keys, actors. */
export const Name = Schema.String.pipe(
  Schema.filter((s) =>
    s.length === 0 ? "must not be empty" : hasControl(s, false) ? "must not contain control characters" : true,
  ),
)

/**
 * A `Name` of at most `maxBytes` UTF-8 bytes and well-formed: the bounds of `Limits`, checked at
 * the boundary so the message names the wire field. OpenAPI's `maxLength` counts characters, so
 * it is the byte limit as an upper bound and the description says bytes.
 */
export const BoundedName = (maxBytes: number) =>
  Name.pipe(
    Schema.filter(
      (s) => (Text_.isWellFormed(s) ? (Text_.overLimit(s, maxBytes) ?? true) : "contains a lone surrogate"),
      {
        jsonSchema: { maxLength: maxBytes },
        description: `non-empty, no control characters, at most ${maxBytes} bytes of UTF-8`,
      },
    ),
  )

/** Free text (a reason): lines and tabs allowed, other control characters refused. */
export const Text = Schema.String.pipe(
  Schema.filter((s) => (hasControl(s, true) ? "must not contain control characters" : true)),
)

/**
 * Why a person acted (a decision): free text with something in it. Empty or blank, it would
 * stand in the record as a decision nobody explained, which halt and takeover already refuse.
 */
export const Reason = Text.pipe(
  Schema.filter((s) => (s.trim().length === 0 ? "must not be empty or blank: say why" : true), {
    jsonSchema: { minLength: 1, pattern: "\\S" },
    description: "free text with at least one non-blank character; lines and tabs allowed",
  }),
)

/** An instant: whole Unix seconds inside, RFC 3339 UTC on the wire; sub-second input is truncated. */
export const Instant = Schema.transformOrFail(Schema.String, Schema.typeSchema(Time.Timestamp), {
  strict: true,
  decode: (text, _, ast) => {
    const millis = Date.parse(text)
    return /^\d{4}-\d{2}-\d{2}T/.test(text) && Number.isFinite(millis)
      ? ParseResult.succeed(Time.fromMillis(millis))
      : ParseResult.fail(new ParseResult.Type(ast, text, "expected an RFC 3339 instant"))
  },
  encode: (at) => ParseResult.succeed(Time.toRfc3339(at)),
}).annotations({ identifier: "Instant", jsonSchema: { type: "string", format: "date-time" } })

/** A task id: `task_<hex>` or the hex on the way in, `task_<hex>` on the way out. */
export const TaskRef = TaskRefSchema.TaskRef

/** A case id: `case_<ULID>` or the bare ULID on the way in, `case_<ULID>` on the way out. */
export const CaseRef = Schema.transformOrFail(Schema.String, Schema.typeSchema(CaseIdSchema), {
  strict: true,
  decode: (input, _, ast) =>
    Either.match(parseCaseId(input), {
      onLeft: (e) => ParseResult.fail(new ParseResult.Type(ast, input, e.message)),
      onRight: ParseResult.succeed,
    }),
  encode: (id: CaseId) => ParseResult.succeed(id),
}).annotations({ identifier: "CaseRef", jsonSchema: { type: "string" } })

export const DEFAULT_LIMIT = 50

export const MAX_LIMIT = 500

/**
 * `?limit=`: a whole number 1 … `MAX_LIMIT`; absent, `DEFAULT_LIMIT` (optional rather than
 * defaulted, so the derived client may omit it). The query carries it as text, but OpenAPI
 * describes a query parameter by its value, so the document says integer with its bounds.
 */
export const Limit = Schema.optional(
  Schema.NumberFromString.pipe(
    Schema.int(),
    Schema.between(1, MAX_LIMIT, { message: () => `limit must be 1 … ${MAX_LIMIT}` }),
  ).annotations({
    jsonSchema: {
      type: "integer",
      minimum: 1,
      maximum: MAX_LIMIT,
      default: DEFAULT_LIMIT,
      description: `how many items at most (1 … ${MAX_LIMIT}, default ${DEFAULT_LIMIT})`,
    },
  }),
)

export const limitOf = (limit: number | undefined): number => limit ?? DEFAULT_LIMIT

// --- requests --------------------------------------------------------------------------------

/** Unknown fields are refused, every problem reported, so the message names each offending field. */
const strict = { parseOptions: { onExcessProperty: "error", errors: "all" } } as const

export const KeyInput = Schema.Struct({
  namespace: BoundedName(MAX_NAME_BYTES),
  value: BoundedName(MAX_KEY_VALUE_BYTES),
}).annotations(strict)

/** At most `MAX_KEYS` keys, counted before repeats are removed. */
export const KeysInput = Schema.Array(KeyInput).pipe(
  Schema.maxItems(MAX_KEYS, {
    message: (issue) =>
      `${Array.isArray(issue.actual) ? issue.actual.length : "too many"} correlation keys, over the limit of ${MAX_KEYS}`,
    description: `at most ${MAX_KEYS} keys`,
  }),
)

/** The native event shape: the caller is the source, so no `source` field. */
export const NativeEvent = Schema.Struct({
  id: BoundedName(MAX_NAME_BYTES),
  kind: BoundedName(MAX_NAME_BYTES),
  correlation: Schema.optionalWith(KeysInput, { default: () => [] }),
  payload: Schema.optionalWith(AnyJson, { default: () => null }),
}).annotations({ ...strict, identifier: "NativeEvent" })

/** A reviewer's answer; the actor is the caller and the roles are the caller's, so neither may appear. */
export const DecisionRequest = Schema.Struct({
  approved: Schema.Boolean,
  reason: Reason,
  amendment: Schema.optionalWith(AnyJson, { default: () => null }),
}).annotations({ ...strict, identifier: "DecisionRequest" })

export const TakeOverRequest = Schema.Struct({ from: Name }).annotations({ ...strict, identifier: "TakeOverRequest" })

export const HaltRequest = Schema.Struct({ reason: Name }).annotations({ ...strict, identifier: "HaltRequest" })

/** Why an operator cancels a run; the actor is the caller. */
export const CancelRequest = Schema.Struct({ reason: BoundedName(MAX_NAME_BYTES) }).annotations({
  ...strict,
  identifier: "CancelRequest",
})

// --- responses -------------------------------------------------------------------------------

export const JustificationView = Schema.Struct({
  summary: Schema.String,
  proposedAction: AnyJson,
  confidence: Schema.OptionFromNullOr(Schema.Number),
  cost: Schema.OptionFromNullOr(Schema.String),
  evidence: Schema.Array(Schema.String),
})

/** A task as the caller sees it, with whether the caller may decide it. */
export const TaskView = Schema.Struct({
  id: TaskRef,
  run: RunId,
  case: Schema.OptionFromNullOr(CaseIdSchema),
  kind: Schema.String,
  justification: JustificationView,
  candidateRoles: Schema.Array(Schema.String),
  assignee: Schema.OptionFromNullOr(Schema.String),
  priority: Task.Priority,
  state: Task.TaskState,
  onExpiry: Task.OnExpiry,
  escalateTo: Schema.Array(Schema.String),
  excludedActors: Schema.Array(Schema.String),
  createdAt: Instant,
  dueAt: Schema.OptionFromNullOr(Instant),
  mayDecide: Schema.Boolean,
}).annotations({ identifier: "Task" })
export type TaskView = typeof TaskView.Type

/**
 * The one shape of every list route: the items, and whether the limit cut the list. A bare array
 * cannot say it was cut, so a client reading 50 of 50 could not tell "all" from "the first 50";
 * each route reads one row past the limit to know.
 */
export const Page = <S extends Schema.Schema.Any>(item: S, identifier: string) =>
  Schema.Struct({ items: Schema.Array(item), truncated: Schema.Boolean }).annotations({ identifier })

/** `rows` read with `limit + 1` as a page of at most `limit`. */
export const page = <A, B>(
  rows: ReadonlyArray<A>,
  limit: number,
  view: (a: A) => B,
): { readonly items: ReadonlyArray<B>; readonly truncated: boolean } => ({
  items: rows.slice(0, limit).map(view),
  truncated: rows.length > limit,
})

export const TaskList = Page(TaskView, "TaskPage")

export const CaseView = Schema.Struct({
  id: CaseIdSchema,
  kind: Schema.String,
  status: CaseStatus,
  correlation: Schema.Array(CorrelationKey),
  state: AnyJson,
  version: CaseVersion,
  openedAt: Instant,
  runs: Schema.Array(RunId),
}).annotations({ identifier: "Case" })
export type CaseView = typeof CaseView.Type

export const DeadlineView = Schema.Struct({
  case: CaseIdSchema,
  name: Schema.String,
  resolvedAt: Instant,
  calendarDigest: Digest,
  warnAt: Schema.OptionFromNullOr(Instant),
  state: DeadlineState,
}).annotations({ identifier: "Deadline" })

/** One journal record of the case, by its place in the chain; the payload stays in the journal. */
export const HistoryEntry = Schema.Struct({
  run: RunId,
  seq: Seq,
  step: StepId,
  phase: Phase,
  kind: Schema.String,
  effect: Schema.OptionFromNullOr(EffectKey),
  hash: Digest,
})

export const CaseDetail = Schema.Struct({
  case: CaseView,
  deadlines: Schema.Array(DeadlineView),
  tasks: Schema.Array(TaskView),
  history: Schema.Array(HistoryEntry),
  historyTruncated: Schema.Boolean,
})

export const EventView = Schema.Struct({
  source: Schema.String,
  id: Schema.String,
  kind: Schema.String,
  correlation: Schema.Array(CorrelationKey),
  payload: AnyJson,
})

export const DeadLetterView = Schema.Struct({ event: EventView, receivedAt: Instant, reason: Schema.String })

/**
 * What `deliver` did (§8.2): `resumed` names the run whose wait took the event and is now driven
 * in the background; `buffered` keeps it for a later wait (or for the run's live owner);
 * `duplicate` means its (source, id) was already known.
 */
export const DeliveryAnswer = Schema.Struct({
  result: Schema.Literal("resumed", "buffered", "duplicate"),
  run: Schema.optional(RunId),
}).annotations({ identifier: "DeliveryAnswer" })
export type DeliveryAnswer = typeof DeliveryAnswer.Type

/** A batch of CloudEvents: one answer per event, in the batch's order. */
export const BatchAnswer = Schema.Struct({ items: Schema.Array(DeliveryAnswer) }).annotations({
  identifier: "BatchAnswer",
})

export const DecideAnswer = Schema.Struct({ task: TaskView, delivery: DeliveryAnswer })

/** `Journal.SuspendReason` on the wire: instants as RFC 3339. */
export const SuspendView = Schema.Union(
  Schema.Struct({
    reason: Schema.Literal("awaiting_event"),
    kind: Schema.String,
    correlation: AnyJson,
    until: Schema.NullOr(Instant),
  }),
  Schema.Struct({ reason: Schema.Literal("awaiting_time"), until: Instant }),
).annotations({ identifier: "SuspendReason" })

/**
 * One run (§8.2): its chain head, its outcome while sealed (`null` while it runs, is suspended or
 * was resumed after a failure), its case, and why it waits when its last record is a suspension.
 */
/**
 * The definition a run was admitted under (§7.13), as its `RunAdmitted` records it: the
 * capability, the version the definition declared and the digest of its registered shape; the
 * version and digest are null for a run admitted before they were recorded (and the digest where
 * none could be computed).
 */
export const DefinitionView = Schema.Struct({
  name: Schema.String,
  version: Schema.OptionFromNullOr(Schema.String),
  digest: Schema.OptionFromNullOr(Schema.String),
}).annotations({ identifier: "RunDefinition" })

export const RunView = Schema.Struct({
  run: RunId,
  /** Null when the run's first record is not its admission (nothing the runtime writes). */
  definition: Schema.OptionFromNullOr(DefinitionView),
  head: Schema.Struct({ seq: Schema.NonNegativeInt, hash: Digest }),
  outcome: Schema.OptionFromNullOr(Journal.RunOutcome),
  case: Schema.OptionFromNullOr(CaseIdSchema),
  suspended: Schema.OptionFromNullOr(SuspendView),
  /**
   * Why the run concluded as it did, as its conclusion journals it: a failure's message, a
   * quarantine's cause (the effect, its key, the step, and for non-determinism the first place the
   * arguments differ), a cancellation's actor and reason, the budget limit; null while it runs or
   * waits, and for a success.
   */
  reason: Schema.OptionFromNullOr(Schema.String),
  /**
   * The run's policy decisions (§7.12) in journal order: every refusal (handled by the step or
   * not), every approval asked for with who decided it, every release (`PolicyDecision.ts`).
   */
  decisions: Schema.Array(PolicyDecision.PolicyDecision),
}).annotations({ identifier: "Run" })
export type RunView = typeof RunView.Type

/** `POST /runs/{run}/cancel`: `requested` is true for the first request, false for a repeat. */
export const CancelAnswer = Schema.Struct({ requested: Schema.Boolean })

/** The tenant's gauges (the sweeper's census, §7.10) and its emergency stop. */
export const Census = Schema.Struct({
  openCases: Schema.NonNegativeInt,
  oldestCaseAgeSecs: Schema.OptionFromNullOr(Schema.NonNegativeInt),
  dueDeadlines: Schema.NonNegativeInt,
  pendingTimers: Schema.NonNegativeInt,
  openTasks: Schema.NonNegativeInt,
  runningRuns: Schema.NonNegativeInt,
  halted: Schema.OptionFromNullOr(Schema.String),
})

export const Health = Schema.Struct({ status: Schema.Literal("ok") })

/** Prometheus text exposition. */
export const PrometheusText = Schema.String.annotations({ identifier: "PrometheusText" })

// --- views of domain records -----------------------------------------------------------------

export const taskView = (task: Task.Task, actor: string, roles: ReadonlyArray<string>): TaskView => ({
  id: task.id,
  run: task.run,
  case: task.case,
  kind: task.kind,
  justification: { ...task.justification },
  candidateRoles: task.candidateRoles,
  assignee: task.assignee,
  priority: task.priority,
  state: task.state,
  onExpiry: task.onExpiry,
  escalateTo: task.escalateTo,
  excludedActors: task.excludedActors,
  createdAt: task.createdAt,
  dueAt: task.dueAt,
  // A decided or expired task, or one another reviewer holds, would refuse the caller's decide
  // (`NotPending`, `AlreadyClaimed`), so the view says so rather than offering a button that fails.
  mayDecide:
    Task.isPending(task.state) &&
    !(task.state === "claimed" && Option.exists(task.assignee, (holder) => holder !== actor)) &&
    Task.mayDecide(task, actor, roles),
})

export const caseView = (kase: Case): CaseView => ({ ...kase })

export const deadlineView = (deadline: Deadline): typeof DeadlineView.Type => ({ ...deadline })

export const deadLetterView = (letter: DeadLetter): typeof DeadLetterView.Type => ({
  event: { ...letter.event },
  receivedAt: letter.receivedAt,
  reason: letter.reason,
})

export const historyEntry = (record: Journal.Record): typeof HistoryEntry.Type => ({
  run: record.run,
  seq: record.seq,
  step: record.step,
  phase: record.phase,
  kind: record.kind.kind,
  effect: record.effectKey,
  hash: record.hash,
})

/**
 * The view of `run` from its records in seq order (the last one says where it stands) and its
 * first record (`first`: its admission, which names its definition).
 */
export const runView = (
  run: RunId,
  head: Journal.Head,
  records: ReadonlyArray<Journal.Record>,
  first: Option.Option<Journal.Record>,
): RunView => {
  const last = records[records.length - 1]
  return {
    run,
    definition: Option.flatMap(first, (r) =>
      r.kind.kind === "RunAdmitted"
        ? Option.some({
            name: r.kind.capability,
            version: Option.fromNullable(r.kind.definition_version),
            digest: Option.fromNullable(r.kind.definition_digest),
          })
        : Option.none(),
    ),
    head: { seq: head.seq, hash: head.hash },
    outcome: last?.kind.kind === "RunSealed" ? Option.some(last.kind.outcome) : Option.none(),
    case: last === undefined ? Option.none() : last.case,
    suspended: last?.kind.kind === "RunSuspended" ? Option.some(last.kind.reason) : Option.none(),
    reason: last?.kind.kind === "RunSealed" ? Option.fromNullable(last.kind.reason) : Option.none(),
    decisions: PolicyDecision.fromRecords(records),
  }
}

export const deliveryAnswer = (outcome: Runtime.Delivered): DeliveryAnswer =>
  outcome._tag === "Resumed"
    ? { result: "resumed", run: outcome.run }
    : { result: outcome._tag === "Buffered" ? "buffered" : "duplicate" }
