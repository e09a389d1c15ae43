import { Schema } from "effect"

/** A batch's item source could not produce a page; distinct from the store's own failures. */
export class SourceError extends Schema.TaggedError<SourceError>()("SourceError", {
  detail: Schema.String,
}) {
  override get message(): string {
    return `batch item source failed: ${this.detail}`
  }
}
