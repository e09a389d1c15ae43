/**
 * The PolicyError family: why the policy engine could not answer, as opposed to answering Deny.
 * A caller that meets one of these must not act: the runtime treats an unanswered question the
 * way it treats a denial.
 */
import { Schema } from "effect"

/**
 * The bundle does not parse or does not validate against the schema; `source` names the
 * directory or file, `problems` each parser or validator message with the policy it is about.
 */
export class BundleInvalid extends Schema.TaggedError<BundleInvalid>()("BundleInvalid", {
  source: Schema.String,
  problems: Schema.NonEmptyArray(Schema.String),
}) {
  override get message(): string {
    return `policy bundle ${this.source} is refused: ${this.problems.join("; ")}`
  }
}

/** The bundle's files could not be read at all (no such path, no permission): nothing was checked. */
export class BundleUnreadable extends Schema.TaggedError<BundleUnreadable>()("BundleUnreadable", {
  source: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `policy bundle ${this.source} cannot be read: ${this.detail}`
  }
}

/** The request is not one the engine can decide (a field missing or of the wrong kind). */
export class RequestMalformed extends Schema.TaggedError<RequestMalformed>()("RequestMalformed", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `policy request is malformed: ${this.detail}`
  }
}

/** The evaluator itself failed on a well-formed request: a fault of the engine, not a decision. */
export class PolicyUnavailable extends Schema.TaggedError<PolicyUnavailable>()("PolicyUnavailable", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `policy could not be evaluated: ${this.detail}`
  }
}

/** What `PolicyEngine.decide` fails with. */
export type PolicyError = RequestMalformed | PolicyUnavailable

/**
 * What a step receives when policy refused one of its effects (§7.12): the effect was not
 * announced and did not act, and a `PolicyDenied` record says so in the journal. A step may handle
 * it (try something else); unhandled, it fails the step like any rejection.
 */
export class PolicyDenied extends Schema.TaggedError<PolicyDenied>()("PolicyDenied", {
  /** The effect kind (or `agentplane.release`) that was refused. */
  action: Schema.String,
  /** `case:<id>` or `run:<id>`. */
  resource: Schema.String,
  reason: Schema.String,
}) {
  override get message(): string {
    return `policy denied ${this.action} on ${this.resource}: ${this.reason}`
  }
}

/**
 * The runtime has no policy engine, so every effect would be denied (§7.12): it refuses to admit a
 * run at all, saying why, rather than start one that could only be refused at its first act.
 */
export class PolicyMissing extends Schema.TaggedError<PolicyMissing>()("PolicyMissing", {
  detail: Schema.String,
}) {
  override get message(): string {
    return this.detail
  }
}
