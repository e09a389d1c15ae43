import { Schema } from "effect"

/** The calendar has no rule for this kind of deadline; it is never approximated by another. */
export class UnknownKind extends Schema.TaggedError<UnknownKind>()("UnknownKind", { kind: Schema.String }) {
  override get message(): string {
    return `no calendar rule for deadline kind ${JSON.stringify(this.kind)}`
  }
}

/** The kind is known but its parameters are not usable. */
export class BadParams extends Schema.TaggedError<BadParams>()("BadParams", {
  kind: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `bad parameters for deadline kind ${JSON.stringify(this.kind)}: ${this.detail}`
  }
}

/** The resolved instant lies outside what a `Date` can represent. */
export class OutOfRange extends Schema.TaggedError<OutOfRange>()("OutOfRange", { kind: Schema.String }) {
  override get message(): string {
    return `deadline of kind ${JSON.stringify(this.kind)} resolves past the representable range`
  }
}

export type CalendarError = UnknownKind | BadParams | OutOfRange
