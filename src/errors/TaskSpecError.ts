import { Schema } from "effect"

/** A task spec whose expiry policy and escalation audience do not fit together (§3.3). */
export class InvalidTaskSpec extends Schema.TaggedError<InvalidTaskSpec>()("InvalidTaskSpec", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `invalid task spec: ${this.detail}`
  }
}
