import { Schema } from "effect"

/** An identifier offered at a boundary did not parse; `detail` says what was expected. */
export class InvalidId extends Schema.TaggedError<InvalidId>()("InvalidId", {
  kind: Schema.String,
  input: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `invalid ${this.kind} ${JSON.stringify(this.input)}: ${this.detail}`
  }
}
