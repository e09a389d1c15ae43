/**
 * Effect keys: the identity of one attempt of one effect in a plan, recomputed on replay.
 */
import { createHash } from "node:crypto"
import { Schema } from "effect"
import * as Canonical from "./Canonical.js"
import type { StepId } from "./Ids.js"
import type { Json } from "./Json.js"
import type { Phase } from "./Phase.js"

/** 64 lowercase hex digits; shown `ek:<hex>`. */
export const EffectKey = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected 64 lowercase hex digits" }),
  Schema.brand("EffectKey"),
)
export type EffectKey = typeof EffectKey.Type

export interface KeyParts {
  readonly step: StepId
  readonly phase: Phase
  /** Position of the effect among its step's effects, from 0. */
  readonly ordinal: number
  readonly attempt: number
  readonly kind: string
  readonly args: Json
}

const u32 = (n: number, what: string): Buffer => {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) throw new RangeError(`${what} must be a u32, got ${n}`)
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}

/**
 * SHA-256 over step, phase, ordinal and attempt (fixed width, big-endian), the kind prefixed by
 * its byte length, then the canonical argument bytes. The length prefix keeps kind and
 * arguments from sliding into each other: ("ab", "c…") and ("a", "bc…") hash differently.
 */
export const derive = (parts: KeyParts): EffectKey => {
  const kind = Buffer.from(parts.kind, "utf8")
  const kindLength = Buffer.alloc(8)
  kindLength.writeBigUInt64BE(BigInt(kind.length))
  const hash = createHash("sha256")
    .update(u32(parts.step, "step"))
    .update(Buffer.from([parts.phase === "forward" ? 0 : 1]))
    .update(u32(parts.ordinal, "ordinal"))
    .update(u32(parts.attempt, "attempt"))
    .update(kindLength)
    .update(kind)
    .update(Canonical.bytes(parts.args))
  return EffectKey.make(hash.digest("hex"))
}

export const show = (key: EffectKey): string => `ek:${key}`
