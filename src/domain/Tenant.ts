/**
 * Tenants: every store call runs for exactly one, taken from context (G1).
 */
import { Context, Either, Schema } from "effect"
import { TenantError } from "../errors/TenantError.js"

const MAX_BYTES = 64

/** A validated tenant name: trimmed, 1–64 UTF-8 bytes, no `/`, `:` or control characters. */
export const TenantId = Schema.String.pipe(Schema.brand("TenantId"))
export type TenantId = typeof TenantId.Type

/**
 * Validates a tenant name. Key scopes are written `<tenant>/<unit>` and metric labels use `:`,
 * so those two characters would let one tenant's name reach into another's scope.
 */
export const parse = (input: string): Either.Either<TenantId, TenantError> => {
  const trimmed = input.trim()
  if (trimmed.length === 0) return Either.left(new TenantError({ input, reason: { _tag: "Empty" } }))
  for (const char of trimmed) {
    const code = char.codePointAt(0) ?? 0
    const control = code < 0x20 || (code >= 0x7f && code <= 0x9f)
    if (char === "/" || char === ":" || control) {
      return Either.left(new TenantError({ input, reason: { _tag: "Separator", char } }))
    }
  }
  if (Buffer.byteLength(trimmed, "utf8") > MAX_BYTES) {
    return Either.left(new TenantError({ input, reason: { _tag: "TooLong" } }))
  }
  return Either.right(TenantId.make(trimmed))
}

/** The tenant of a deployment that never names one. */
export const DEFAULT: TenantId = TenantId.make("default")

/** The tenant every store method reads from its context; no method argument ever names one. */
export class Tenant extends Context.Tag("agentplane/Tenant")<Tenant, TenantId>() {}
