/**
 * Canonical bytes: the RFC 8785 (JCS) serialisation of a JSON value, canon version 1.
 */
import canonicalize from "canonicalize"
import type { Json } from "./Json.js"

export const CANON_VERSION = 1

/** The JCS text of a JSON value; the same value always gives the same text, whatever its key order. */
export const text = (value: Json): string => {
  const out = canonicalize(value)
  // A `Json` value always serialises; this guards callers that bypassed the type.
  if (out === undefined) throw new TypeError("value has no canonical JSON form")
  return out
}

/** The UTF-8 bytes of `text(value)`: what digests and effect keys are computed over. */
export const bytes = (value: Json): Uint8Array => Buffer.from(text(value), "utf8")
