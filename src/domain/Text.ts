/**
 * Well-formed text: the rule every stored string obeys. A JavaScript string can hold a lone
 * surrogate (`"s\ud800"`), which has no UTF-8 form: PostgreSQL writes it as U+FFFD (so
 * `"s\ud800"` and `"s\udfff"` become one id) while SQLite stores invalid UTF-8. Refusing it at
 * the domain schemas makes every backend and the memory layer answer the same.
 */
import { Either, Schema } from "effect"

// With the `u` flag a paired surrogate is one astral code point, so `\p{Cs}` matches only a lone
// one. The same answer as `String.prototype.isWellFormed` (Node 20), which the ES2022 lib this
// project compiles against does not declare.
const LONE_SURROGATE = /\p{Cs}/u

/** True when `s` holds no lone surrogate, so it has a UTF-8 form. */
export const isWellFormed = (s: string): boolean => !LONE_SURROGATE.test(s)

/** The length of `s` in UTF-8 bytes. */
export const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8")

const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/**
 * UTF-8 bytes → text; `Left` when the bytes are not UTF-8. Fatal rather than replacing with
 * U+FFFD: two different byte strings must never decode to one id.
 */
export const decodeUtf8 = (bytes: Uint8Array): Either.Either<string, string> => {
  try {
    return Either.right(fatal.decode(bytes))
  } catch {
    return Either.left(`is not valid UTF-8 (at byte ${firstInvalidByte(bytes)})`)
  }
}

/** A string with no lone surrogate. */
export const WellFormed = Schema.String.pipe(
  Schema.filter((s) => isWellFormed(s) || "contains a lone surrogate (text with no UTF-8 form)"),
)

/** Why `s` is over `maxBytes` UTF-8 bytes (the limit and the size seen), or `undefined`. */
export const overLimit = (s: string, maxBytes: number): string | undefined => {
  // A string of n UTF-16 units has at most 3n bytes: skip the count for the common short one.
  if (s.length * 3 <= maxBytes) return undefined
  const bytes = utf8Length(s)
  return bytes <= maxBytes ? undefined : `is ${bytes} bytes of UTF-8, over the limit of ${maxBytes}`
}

/** A well-formed string of at most `maxBytes` UTF-8 bytes; the message says the limit and the size seen. */
export const bounded = (maxBytes: number) =>
  WellFormed.pipe(
    Schema.filter((s) => overLimit(s, maxBytes) ?? true, {
      jsonSchema: { maxLength: maxBytes },
      description: `at most ${maxBytes} bytes of UTF-8`,
    }),
  )

// internal

/**
 * The offset of the first byte that does not begin or continue a valid UTF-8 sequence (RFC 3629
 * table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF). Only on the error path.
 */
const firstInvalidByte = (bytes: Uint8Array): number => {
  let i = 0
  while (i < bytes.length) {
    const b = bytes[i] as number
    if (b < 0x80) {
      i++
      continue
    }
    const need = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0
    if (need === 0) return i
    const [lo, hi] =
      b === 0xe0
        ? [0xa0, 0xbf]
        : b === 0xed
          ? [0x80, 0x9f]
          : b === 0xf0
            ? [0x90, 0xbf]
            : b === 0xf4
              ? [0x80, 0x8f]
              : [0x80, 0xbf]
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k]
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return i
    }
    i += need + 1
  }
  return i
}
