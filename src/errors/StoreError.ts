/**
 * The StoreError family (§4): every failure a store method can raise, named for its condition.
 */
import { Schema } from "effect"

/**
 * Why a backend failed, as far as a caller can act on it: `lock_timeout` (a lock held elsewhere
 * too long), `statement_timeout`, `pool_exhausted` (every connection busy), `connect_failed`
 * (the database cannot be reached or opened), `busy` (another process holds SQLite's write lock),
 * `store_gone` (the SQLite file was deleted or replaced under the process), `backend` (anything
 * else). Set by the layers where they see the driver's error, so no caller reads it from text.
 */
export const BackendReason = Schema.Literal(
  "lock_timeout",
  "statement_timeout",
  "pool_exhausted",
  "connect_failed",
  "busy",
  "store_gone",
  "backend",
)
export type BackendReason = typeof BackendReason.Type

/**
 * Infrastructure failure (the database is down, a statement failed); the driver's error stays
 * inside the layers. `detail` is for the operator's log; `reason` for a caller deciding to retry.
 */
export class Backend extends Schema.TaggedError<Backend>()("Backend", {
  detail: Schema.String,
  reason: Schema.optionalWith(BackendReason, { default: () => "backend" }),
}) {
  override get message(): string {
    return `store backend failure: ${this.detail}`
  }
}

/** A write named a row that does not exist: a case, `<case>/<name>`, a task, a batch, `<batch>/<key>`. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { what: Schema.String }) {
  override get message(): string {
    return `not found: ${this.what}`
  }
}

/** A stored value could not be decoded; `seq` is the journal position, 0 outside the journal. */
export class Corrupt extends Schema.TaggedError<Corrupt>()("Corrupt", {
  detail: Schema.String,
  seq: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return this.seq === 0 ? `corrupt stored value: ${this.detail}` : `corrupt record at seq ${this.seq}: ${this.detail}`
  }
}

/** A state write named a version the case has moved past. */
export class CaseConflict extends Schema.TaggedError<CaseConflict>()("CaseConflict", {
  case: Schema.String,
  expected: Schema.NonNegativeInt,
  current: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `case ${this.case} is at v${this.current}, not v${this.expected}: re-read and retry`
  }
}

/** A batch was reopened with a plan other than the one it was frozen with. */
export class BatchPlanChanged extends Schema.TaggedError<BatchPlanChanged>()("BatchPlanChanged", {
  batch: Schema.String,
  stored: Schema.String,
  offered: Schema.String,
}) {
  override get message(): string {
    return `batch ${this.batch} runs plan ${this.stored}, not ${this.offered}`
  }
}

/** Closing a case that still has pending or warned deadlines. */
export class ObligationsOutstanding extends Schema.TaggedError<ObligationsOutstanding>()("ObligationsOutstanding", {
  case: Schema.String,
  outstanding: Schema.Int.pipe(Schema.positive()),
}) {
  override get message(): string {
    return `case ${this.case} has ${this.outstanding} outstanding obligation(s) and cannot be closed`
  }
}

/** An import would merge: the case id exists, or an open key is held by another open case. */
export class ImportRefused extends Schema.TaggedError<ImportRefused>()("ImportRefused", {
  case: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `import of case ${this.case} refused: ${this.detail}`
  }
}

/** A journal record over the 1 MiB limit. */
export class RecordTooLarge extends Schema.TaggedError<RecordTooLarge>()("RecordTooLarge", {
  bytes: Schema.NonNegativeInt,
  limit: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `record of ${this.bytes} bytes exceeds the ${this.limit}-byte limit`
  }
}

/** A second `EffectStarted` for one effect key in one run. */
export class DuplicateEffect extends Schema.TaggedError<DuplicateEffect>()("DuplicateEffect", {
  run: Schema.String,
  effect: Schema.String,
}) {
  override get message(): string {
    return `effect ek:${this.effect} already started in run ${this.run}`
  }
}

/** An admission key already claimed; `run` is the holder. */
export class DuplicateAdmission extends Schema.TaggedError<DuplicateAdmission>()("DuplicateAdmission", {
  key: Schema.String,
  run: Schema.String,
}) {
  override get message(): string {
    return `admission key ${JSON.stringify(this.key)} is held by run ${this.run}`
  }
}

/** A guarded append (`AppendOptions.guardCancel`) met the run's stored cancellation request and wrote nothing. */
export class CancelPending extends Schema.TaggedError<CancelPending>()("CancelPending", {
  run: Schema.String,
  actor: Schema.String,
  reason: Schema.String,
}) {
  override get message(): string {
    return `run ${this.run} has a cancellation request by ${this.actor}: ${this.reason}`
  }
}

/** An append or seal under a stale or invented epoch. */
export class Fenced extends Schema.TaggedError<Fenced>()("Fenced", {
  run: Schema.String,
  held: Schema.Int,
  current: Schema.Int,
}) {
  override get message(): string {
    return `run ${this.run}: epoch ${this.held} is fenced (current ${this.current})`
  }
}

/** An append to, or second seal of, a sealed run. */
export class RunSealed extends Schema.TaggedError<RunSealed>()("RunSealed", {
  run: Schema.String,
  outcome: Schema.String,
}) {
  override get message(): string {
    return `run ${this.run} is sealed (${this.outcome})`
  }
}

/** An acquire while a live lease exists, even for the same owner. */
export class LeaseHeld extends Schema.TaggedError<LeaseHeld>()("LeaseHeld", {
  run: Schema.String,
  owner: Schema.String,
  epoch: Schema.Int,
  remainingSecs: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `run ${this.run} is leased by ${this.owner} (epoch ${this.epoch}) for ${this.remainingSecs} s more`
  }
}

/** A renew by anyone but the current holder. */
export class LeaseNotHeld extends Schema.TaggedError<LeaseNotHeld>()("LeaseNotHeld", {
  run: Schema.String,
  epoch: Schema.Int,
}) {
  override get message(): string {
    return `run ${this.run}: no live lease at epoch ${this.epoch} for this owner`
  }
}

/** A verbatim import (§9.3) that would not continue the run's stored chain, or would merge into it. */
export class RecordRefused extends Schema.TaggedError<RecordRefused>()("RecordRefused", {
  run: Schema.String,
  seq: Schema.NonNegativeInt,
  detail: Schema.String,
}) {
  override get message(): string {
    return `import of record ${this.run}/${this.seq} refused: ${this.detail}`
  }
}

export type StoreError =
  | Backend
  | NotFound
  | Corrupt
  | CaseConflict
  | BatchPlanChanged
  | ObligationsOutstanding
  | ImportRefused
  | RecordTooLarge
  | DuplicateEffect
  | DuplicateAdmission
  | Fenced
  | RunSealed
  | LeaseHeld
  | LeaseNotHeld
  | CancelPending
  | RecordRefused
