/**
 * The erasure family (§9.1): what the blob store and the key ring refuse, named for the condition.
 */
import { Schema } from "effect"

/** The blob was expired: its bytes are gone for good and a put of the same bytes is refused. */
export class BlobExpired extends Schema.TaggedError<BlobExpired>()("BlobExpired", {
  digest: Schema.String,
  at: Schema.Int,
  reason: Schema.String,
}) {
  override get message(): string {
    return `blob ${this.digest} was expired at ${this.at} (${this.reason})`
  }
}

/** The key scope was destroyed: nothing sealed under it opens again, and no new key is made for it. */
export class Destroyed extends Schema.TaggedError<Destroyed>()("Destroyed", {
  scope: Schema.String,
  at: Schema.Int,
  reason: Schema.String,
}) {
  override get message(): string {
    return `key scope ${this.scope} was destroyed at ${this.at} (${this.reason})`
  }
}

/** The key ring holds no key for the scope and never did: data sealed elsewhere, or the wrong key ring. */
export class KeyUnknown extends Schema.TaggedError<KeyUnknown>()("KeyUnknown", { scope: Schema.String }) {
  override get message(): string {
    return `the key ring has no key for scope ${this.scope}: is this the key ring the data was sealed with?`
  }
}

/** A wrapped key was wrapped by another key-encryption key than the one supplied. */
export class KekMismatch extends Schema.TaggedError<KekMismatch>()("KekMismatch", {
  scope: Schema.String,
  stored: Schema.String,
  supplied: Schema.String,
}) {
  override get message(): string {
    return `key scope ${this.scope} is wrapped by KEK ${this.stored}, but KEK ${this.supplied} was supplied (AGENTPLANE_KEK or AGENTPLANE_KEK_FILE)`
  }
}

/** The key-encryption key the operator supplied is unusable; `detail` says what to fix. */
export class KekInvalid extends Schema.TaggedError<KekInvalid>()("KekInvalid", { detail: Schema.String }) {
  override get message(): string {
    return `key-encryption key: ${this.detail}`
  }
}

/**
 * An erasure asked of a store with no key ring: its payloads (case state, task justifications,
 * the journal's inputs and outputs, buffered events) are stored in the clear and would stay
 * readable after it, so it is refused rather than reported done. `blobsOnly` erases the blobs alone.
 */
export class PayloadsStayReadable extends Schema.TaggedError<PayloadsStayReadable>()("PayloadsStayReadable", {
  case: Schema.String,
}) {
  override get message(): string {
    return `case ${this.case}: this store has no key ring, so the case's payloads (case state, task justifications, the journal's inputs, plans, notes and effect outputs, buffered events) are in the clear and would stay readable; erasure removed nothing. Give the KEK the store was sealed with (AGENTPLANE_KEK or --kek-file), or erase the blobs alone (--blobs-only)`
  }
}

/** The store holds payloads sealed under the KEK `kekId` (its sealing mark says so), but no KEK was given. */
export class SealedWithoutKek extends Schema.TaggedError<SealedWithoutKek>()("SealedWithoutKek", {
  store: Schema.String,
  kekId: Schema.String,
}) {
  override get message(): string {
    return `store ${this.store} holds payloads sealed under KEK ${this.kekId}, but no KEK was given: set AGENTPLANE_KEK or --kek-file (env AGENTPLANE_KEK_FILE) to that KEK, or put its file beside a SQLite store as <store>.kek; without it new payloads would be written in the clear, out of erasure's reach`
  }
}

/** The store was sealed under the KEK `stored`, and the KEK given is another, `supplied`. */
export class SealedUnderOtherKek extends Schema.TaggedError<SealedUnderOtherKek>()("SealedUnderOtherKek", {
  store: Schema.String,
  stored: Schema.String,
  supplied: Schema.String,
}) {
  override get message(): string {
    return `store ${this.store} is sealed under KEK ${this.stored}, but the KEK given (AGENTPLANE_KEK, --kek-file or the store's .kek file) is ${this.supplied}: give the KEK the store was sealed with`
  }
}
