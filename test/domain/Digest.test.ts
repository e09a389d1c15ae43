import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Schema } from "effect"
import * as Digest from "../../src/domain/Digest.js"

const sha256 = (...parts: ReadonlyArray<Uint8Array>): string => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part)
  return hash.digest("hex")
}

const HEX64 = /^[0-9a-f]{64}$/

describe("Digest.of", () => {
  it("of the empty string is the SHA-256 of nothing", () => {
    expect(Digest.of("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(Digest.of(new Uint8Array(0))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  })

  it('of("abc") is the FIPS 180-2 test vector', () => {
    expect(Digest.of("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  })

  it("hashes a string as its UTF-8 bytes", () => {
    expect(Digest.of("é€😀")).toBe(Digest.of(new Uint8Array(Buffer.from("é€😀", "utf8"))))
    expect(Digest.of("é")).toBe(sha256(new Uint8Array([0xc3, 0xa9])))
  })

  it("always gives 64 lowercase hex digits, matching an independent SHA-256", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.uint8Array({ maxLength: 256 }), (bytes) => {
        const d = Digest.of(bytes)
        expect(d).toMatch(HEX64)
        expect(d).toBe(sha256(bytes))
      }),
    )
  })
})

describe("Digest.ZERO", () => {
  it("is 64 zeros (32 zero bytes)", () => {
    expect(Digest.ZERO).toBe("0".repeat(64))
    expect(Array.from(Digest.toBytes(Digest.ZERO))).toEqual(new Array(32).fill(0))
  })
})

describe("Digest.chain", () => {
  it("is SHA-256 over the 32 raw bytes of prev followed by the bytes", () => {
    const prev = Digest.of("abc")
    const bytes = new Uint8Array(Buffer.from("record #1", "utf8"))
    const expected = sha256(new Uint8Array(Buffer.from(prev, "hex")), bytes)
    expect(Digest.chain(prev, bytes)).toBe(expected)
  })

  it("hashes the raw bytes of prev, not its hex text", () => {
    const prev = Digest.of("abc")
    const bytes = new Uint8Array([1, 2, 3])
    const overHex = sha256(new Uint8Array(Buffer.from(prev, "utf8")), bytes)
    expect(Digest.chain(prev, bytes)).not.toBe(overHex)
  })

  it("from ZERO over nothing is the SHA-256 of 32 zero bytes", () => {
    expect(Digest.chain(Digest.ZERO, new Uint8Array(0))).toBe(sha256(new Uint8Array(32)))
    expect(Digest.chain(Digest.ZERO, new Uint8Array(0))).toBe(
      "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925",
    )
  })

  it("matches an independent SHA-256 for any prev and bytes", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.uint8Array({ minLength: 32, maxLength: 32 }),
        FastCheck.uint8Array({ maxLength: 200 }),
        (prevBytes, bytes) => {
          const prev = Digest.Digest.make(Buffer.from(prevBytes).toString("hex"))
          expect(Digest.chain(prev, bytes)).toBe(sha256(prevBytes, bytes))
        },
      ),
    )
  })

  it("depends on prev: the same bytes under different predecessors differ", () => {
    const bytes = new Uint8Array([42])
    expect(Digest.chain(Digest.ZERO, bytes)).not.toBe(Digest.chain(Digest.of("x"), bytes))
  })
})

describe("Digest.fromBytes / toBytes", () => {
  it("refuses 31 and 33 bytes with a Left", () => {
    expect(Either.isLeft(Digest.fromBytes(new Uint8Array(31)))).toBe(true)
    expect(Either.isLeft(Digest.fromBytes(new Uint8Array(33)))).toBe(true)
  })

  it("refuses no bytes and 64 bytes (hex text length) with a Left", () => {
    expect(Either.isLeft(Digest.fromBytes(new Uint8Array(0)))).toBe(true)
    expect(Either.isLeft(Digest.fromBytes(new Uint8Array(64)))).toBe(true)
  })

  it("accepts 32 bytes", () => {
    expect(Digest.fromBytes(new Uint8Array(32))).toEqual(Either.right(Digest.ZERO))
    const bytes = new Uint8Array(32).map((_, i) => i * 7 + 1)
    expect(Digest.fromBytes(bytes)).toEqual(Either.right(Buffer.from(bytes).toString("hex")))
  })

  it("gives lowercase hex for high bytes", () => {
    expect(Digest.fromBytes(new Uint8Array(32).fill(0xab))).toEqual(Either.right("ab".repeat(32)))
  })

  it("fromBytes ∘ toBytes and toBytes ∘ fromBytes are identities", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const digest = Either.getOrThrow(Digest.fromBytes(bytes))
        expect(digest).toMatch(HEX64)
        const back = Digest.toBytes(digest)
        expect(back.length).toBe(32)
        expect(Array.from(back)).toEqual(Array.from(bytes))
        expect(Digest.fromBytes(back)).toEqual(Either.right(digest))
      }),
    )
  })
})

describe("Digest schema", () => {
  const decode = Schema.decodeUnknownEither(Digest.Digest)

  it("accepts 64 lowercase hex digits", () => {
    expect(Either.isRight(decode(Digest.of("abc")))).toBe(true)
  })

  it("refuses uppercase, wrong lengths and non-hex", () => {
    expect(Either.isLeft(decode(Digest.of("abc").toUpperCase()))).toBe(true)
    expect(Either.isLeft(decode("0".repeat(63)))).toBe(true)
    expect(Either.isLeft(decode("0".repeat(65)))).toBe(true)
    expect(Either.isLeft(decode("g".repeat(64)))).toBe(true)
    expect(Either.isLeft(decode(""))).toBe(true)
  })
})
