/**
 * The RuntimeError family (§4, §7): what the runtime refuses or detects while driving a run.
 */
import { Schema } from "effect"

const Offered = Schema.Struct({ key: Schema.String, kind: Schema.String })

/** A recomputed effect key or kind differs from the journal at `seq`; the run is quarantined. */
export class NonDeterminism extends Schema.TaggedError<NonDeterminism>()("NonDeterminism", {
  run: Schema.String,
  seq: Schema.NonNegativeInt,
  expected: Offered,
  offered: Offered,
  /** Where the offered arguments first differ from the journaled ones, when the kinds agree. */
  diff: Schema.optional(Schema.String),
}) {
  override get message(): string {
    const where = this.diff === undefined ? "" : `; the arguments differ ${this.diff}`
    return `run ${this.run} diverged from its journal at seq ${this.seq}: expected ${this.expected.kind} ek:${this.expected.key}, the definition offered ${this.offered.kind} ek:${this.offered.key}${where}`
  }
}

/** Strict replay needed a record past the end of the run's history. */
export class ReplayOverrun extends Schema.TaggedError<ReplayOverrun>()("ReplayOverrun", {
  run: Schema.String,
  seq: Schema.NonNegativeInt,
}) {
  override get message(): string {
    return `strict replay of ${this.run} went past the end of its history (seq ${this.seq})`
  }
}

/**
 * A run was admitted under a version of its definition this instance does not register (§7.13):
 * the instance leaves it alone (no lease kept, nothing written) for one that does.
 */
export class UnknownVersion extends Schema.TaggedError<UnknownVersion>()("UnknownVersion", {
  run: Schema.String,
  name: Schema.String,
  version: Schema.String,
  registered: Schema.String,
}) {
  override get message(): string {
    return `run ${this.run} was admitted under ${this.name} version ${JSON.stringify(this.version)}; this instance registers version ${JSON.stringify(this.registered)} and leaves the run alone`
  }
}

/** A definition or a call the contract forbids. */
export class PlanContract extends Schema.TaggedError<PlanContract>()("PlanContract", { detail: Schema.String }) {
  override get message(): string {
    return `plan contract: ${this.detail}`
  }
}

/** A budget ceiling of 0 where §7.3 forbids it. */
export class InvalidBudget extends Schema.TaggedError<InvalidBudget>()("InvalidBudget", { limit: Schema.String }) {
  override get message(): string {
    return `a budget ceiling of 0 on ${this.limit} would refuse the run's first operation`
  }
}

/** Resume, cancel or raise of a run that is sealed. */
export class RunClosed extends Schema.TaggedError<RunClosed>()("RunClosed", {
  run: Schema.String,
  outcome: Schema.String,
}) {
  override get message(): string {
    return `run ${this.run} is sealed (${this.outcome}) and closed to resume`
  }
}

/**
 * An admission key already admitted a run with another input or definition: the retry is not a
 * retry, and answering the first run would hide the mistake. `run` is the first run.
 */
export class AdmissionConflict extends Schema.TaggedError<AdmissionConflict>()("AdmissionConflict", {
  key: Schema.String,
  run: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `admission key ${JSON.stringify(this.key)} admitted run ${this.run} with ${this.detail}; a retry must send the same capability and input`
  }
}

export type RuntimeError =
  | NonDeterminism
  | ReplayOverrun
  | PlanContract
  | InvalidBudget
  | RunClosed
  | AdmissionConflict
  | UnknownVersion
