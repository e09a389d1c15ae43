import { Schema } from "effect"

/** Why a tenant name was refused: empty after trimming, a separator or control character, or too long. */
export const TenantErrorReason = Schema.Union(
  Schema.TaggedStruct("Empty", {}),
  Schema.TaggedStruct("Separator", { char: Schema.String }),
  Schema.TaggedStruct("TooLong", {}),
)

export class TenantError extends Schema.TaggedError<TenantError>()("TenantError", {
  input: Schema.String,
  reason: TenantErrorReason,
}) {
  override get message(): string {
    const reason = this.reason
    return reason._tag === "Empty"
      ? "a tenant name must not be empty"
      : reason._tag === "Separator"
        ? `a tenant name must not contain ${JSON.stringify(reason.char)} (no '/', ':' or control characters)`
        : "a tenant name must be at most 64 UTF-8 bytes"
  }
}
