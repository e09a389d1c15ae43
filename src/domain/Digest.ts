/**
 * SHA-256 digests, shown and stored in text as 64 lowercase hex digits.
 */
import { createHash } from "node:crypto"
import { Either, Schema } from "effect"

export const Digest = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected 64 lowercase hex digits (SHA-256)" }),
  Schema.brand("Digest"),
)
export type Digest = typeof Digest.Type

const BYTES = 32

/**
 * A digest this module computed itself: hex of exactly 32 bytes always matches the pattern, so
 * the brand is applied without testing it again (every journal record makes two, every read two
 * more, and the check was a percent of a wake-up's CPU).
 */
const computed = (hex: string): Digest => Digest.make(hex, { disableValidation: true })

/** SHA-256 of the bytes (a string is hashed as its UTF-8 encoding). */
export const of = (bytes: Uint8Array | string): Digest => computed(createHash("sha256").update(bytes).digest("hex"))

/** SHA-256(prev ‖ bytes): the journal's chaining step. */
export const chain = (prev: Digest, bytes: Uint8Array): Digest =>
  computed(createHash("sha256").update(toBytes(prev)).update(bytes).digest("hex"))

/** 32 zero bytes: the predecessor of every run's first record. */
export const ZERO: Digest = Digest.make("0".repeat(BYTES * 2))

export const toBytes = (digest: Digest): Uint8Array => Buffer.from(digest, "hex")

/** Stored bytes → digest; anything but exactly 32 bytes is damage, reported as `Left`. */
export const fromBytes = (bytes: Uint8Array): Either.Either<Digest, string> =>
  bytes.length === BYTES
    ? Either.right(computed(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")))
    : Either.left(`a digest must be ${BYTES} bytes, found ${bytes.length}`)
