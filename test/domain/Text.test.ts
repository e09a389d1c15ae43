import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Text from "../../src/domain/Text.js"

const bytes = (...b: ReadonlyArray<number>) => new Uint8Array(b)

describe("Text.decodeUtf8", () => {
  it("decodes UTF-8, a byte-order mark kept as U+FEFF", () => {
    expect(Text.decodeUtf8(new Uint8Array(Buffer.from("Müller 😀", "utf8")))).toEqual(Either.right("Müller 😀"))
    expect(Text.decodeUtf8(bytes(0xef, 0xbb, 0xbf, 0x31))).toEqual(Either.right("\ufeff1"))
  })

  it("refuses bytes that are not UTF-8 instead of writing U+FFFD, naming the first bad byte", () => {
    // The pair: ISO-8859-1 "ü" and "ö" would both have decoded to "M\ufffdller".
    expect(Text.decodeUtf8(bytes(0x4d, 0xfc, 0x6c))).toEqual(Either.left("is not valid UTF-8 (at byte 1)"))
    expect(Text.decodeUtf8(bytes(0x4d, 0xf6, 0x6c))).toEqual(Either.left("is not valid UTF-8 (at byte 1)"))
    expect(Text.decodeUtf8(bytes(0x61, 0xc0, 0xaf))).toEqual(Either.left("is not valid UTF-8 (at byte 1)")) // overlong "/"
    expect(Text.decodeUtf8(bytes(0x61, 0x62, 0xed, 0xa0, 0x80))).toEqual(Either.left("is not valid UTF-8 (at byte 2)")) // a surrogate
    expect(Text.decodeUtf8(bytes(0xf4, 0x90, 0x80, 0x80))).toEqual(Either.left("is not valid UTF-8 (at byte 0)")) // past U+10FFFF
    expect(Text.decodeUtf8(bytes(0x61, 0xe2, 0x82))).toEqual(Either.left("is not valid UTF-8 (at byte 1)")) // cut short
  })
})

describe("Text.isWellFormed", () => {
  it("is false for a lone surrogate, high or low, and true for a pair", () => {
    for (const s of ["s\ud800", "s\udfff", "\udc00\ud800", "a\ud83d"]) expect(Text.isWellFormed(s)).toBe(false)
    for (const s of ["", "s\ufffd", "😀", "\ud83d\ude00x"]) expect(Text.isWellFormed(s)).toBe(true)
  })
})

describe("Text.overLimit", () => {
  it("counts UTF-8 bytes, not UTF-16 units", () => {
    expect(Text.overLimit("é".repeat(256), 512)).toBeUndefined()
    expect(Text.overLimit(`${"é".repeat(256)}x`, 512)).toBe("is 513 bytes of UTF-8, over the limit of 512")
    expect(Text.overLimit("😀".repeat(129), 512)).toBe("is 516 bytes of UTF-8, over the limit of 512")
    expect(Text.overLimit("x".repeat(512), 512)).toBeUndefined()
  })
})
