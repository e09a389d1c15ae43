/**
 * The transparency-log family (§6.5): what a proof, a leaf, a signed note or a checkpoint fails
 * with when it is checked. Each names the condition an auditor would report.
 */
import { Schema } from "effect"

/** An inclusion or consistency proof does not prove what it claims; `detail` says which check failed. */
export class ProofInvalid extends Schema.TaggedError<ProofInvalid>()("ProofInvalid", {
  proof: Schema.Literal("inclusion", "consistency"),
  detail: Schema.String,
}) {
  override get message(): string {
    return `invalid ${this.proof} proof: ${this.detail}`
  }
}

/** Bytes offered as a log leaf are not a leaf this format version writes. */
export class LeafMalformed extends Schema.TaggedError<LeafMalformed>()("LeafMalformed", { detail: Schema.String }) {
  override get message(): string {
    return `malformed log leaf: ${this.detail}`
  }
}

/** A text is not a signed note in the C2SP `signed-note` syntax. */
export class NoteMalformed extends Schema.TaggedError<NoteMalformed>()("NoteMalformed", { detail: Schema.String }) {
  override get message(): string {
    return `malformed signed note: ${this.detail}`
  }
}

/** A note's text is not a C2SP `tlog-checkpoint` body. */
export class CheckpointMalformed extends Schema.TaggedError<CheckpointMalformed>()("CheckpointMalformed", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `malformed checkpoint: ${this.detail}`
  }
}

/** A verifier key is not `<name>+<hex key id>+<base64(0x01 ‖ Ed25519 public key)>`, or its id does not match. */
export class VerifierKeyMalformed extends Schema.TaggedError<VerifierKeyMalformed>()("VerifierKeyMalformed", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `malformed verifier key: ${this.detail}`
  }
}

/** No signature on the note is by a key the verifier trusts: its text must be ignored. */
export class NoteUnverified extends Schema.TaggedError<NoteUnverified>()("NoteUnverified", {
  signers: Schema.Array(Schema.String),
}) {
  override get message(): string {
    const by = this.signers.length === 0 ? "no signatures" : `signatures only by ${this.signers.join(", ")}`
    return `the note has no signature by a trusted key (${by})`
  }
}

/** A signature names a trusted key (name and id) but does not verify: the whole note is refused. */
export class SignatureInvalid extends Schema.TaggedError<SignatureInvalid>()("SignatureInvalid", {
  name: Schema.String,
  keyId: Schema.String,
}) {
  override get message(): string {
    return `the signature by ${this.name}+${this.keyId} does not verify: the note was altered or forged`
  }
}

export type NoteError = NoteMalformed | NoteUnverified | SignatureInvalid

/** The run has no leaf in this tenant's log: it is not sealed here. */
export class RunNotLogged extends Schema.TaggedError<RunNotLogged>()("RunNotLogged", { run: Schema.String }) {
  override get message(): string {
    return `run ${this.run} has no leaf in the log: it is not sealed in this tenant`
  }
}

/** The run is sealed at `position`, but the log has integrated only `size` leaves: no checkpoint covers it yet. */
export class RunNotIntegrated extends Schema.TaggedError<RunNotIntegrated>()("RunNotIntegrated", {
  run: Schema.String,
  position: Schema.Number,
  size: Schema.Number,
}) {
  override get message(): string {
    return `run ${this.run} is at position ${this.position}, not yet integrated (the log has ${this.size} leaves)`
  }
}

/** A tree of `size` leaves does not hold the run, whose leaf is at `position` (a size must exceed it). */
export class RunOutsideSize extends Schema.TaggedError<RunOutsideSize>()("RunOutsideSize", {
  run: Schema.String,
  position: Schema.Number,
  size: Schema.Number,
}) {
  override get message(): string {
    return `run ${this.run} is at position ${this.position}: a tree of ${this.size} leaves does not hold it`
  }
}

/** A size asked for is past the log's integrated size `latest` (or not a whole number of leaves). */
export class SizeBeyondLog extends Schema.TaggedError<SizeBeyondLog>()("SizeBeyondLog", {
  size: Schema.Number,
  latest: Schema.Number,
}) {
  override get message(): string {
    return `size ${this.size} is not a size of this log, which has ${this.latest} leaves integrated`
  }
}

/** A consistency proof was asked from `from` to `to` where it must hold `0 <= from <= to`. */
export class SizesUnordered extends Schema.TaggedError<SizesUnordered>()("SizesUnordered", {
  from: Schema.Number,
  to: Schema.Number,
}) {
  override get message(): string {
    return `a consistency proof needs 0 <= from <= to, not ${this.from} → ${this.to}`
  }
}

/** The log's signing key could not be read: `detail` names the file and what is wrong with it. */
export class LogKeyInvalid extends Schema.TaggedError<LogKeyInvalid>()("LogKeyInvalid", { detail: Schema.String }) {
  override get message(): string {
    return `log key: ${this.detail}`
  }
}
