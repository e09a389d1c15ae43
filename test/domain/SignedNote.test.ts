import { generateKeyPairSync } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as SignedNote from "../../src/domain/SignedNote.js"

/**
 * Known answers from Go's golang.org/x/mod/sumdb/note tests (BSD-3-Clause): a signing key, the
 * verifier keys, a text and its signed note as Go writes them. Ed25519 is deterministic, so our
 * signature must be theirs byte for byte.
 */
const PETER_SKEY = "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz" // 0x01 ‖ seed, from PRIVATE+KEY+PeterNeumann+c74f20a3+…
const PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
const ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
const PETER_SIG =
  "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
const ENOCH_SIG =
  "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"

const peter = SignedNote.signer("PeterNeumann", Buffer.from(PETER_SKEY, "base64").subarray(1))
const peterKey = Either.getOrThrow(SignedNote.parseVerifierKey(PETER_VKEY))
const enochKey = Either.getOrThrow(SignedNote.parseVerifierKey(ENOCH_VKEY))

const fresh = (name: string): SignedNote.Signer => {
  const { privateKey } = generateKeyPairSync("ed25519")
  const seed = Buffer.from(privateKey.export({ format: "jwk" }).d as string, "base64url")
  return SignedNote.signer(name, seed)
}

const tagOf = <E extends { readonly _tag: string }>(result: Either.Either<unknown, E>): string | undefined =>
  Either.isLeft(result) ? result.left._tag : undefined

describe("SignedNote keys", () => {
  it("derives Go's key id and verifier key from the published seed", () => {
    expect(SignedNote.showKeyId(peter.keyId)).toBe("c74f20a3")
    expect(SignedNote.formatVerifierKey(peter)).toBe(PETER_VKEY)
    expect(peterKey).toEqual({ name: peter.name, keyId: peter.keyId, publicKey: peter.publicKey })
  })

  it("computes the key id as SHA-256(name ‖ 0x0A ‖ 0x01 ‖ key), first four bytes big-endian", () => {
    expect(SignedNote.keyId("EnochRoot", enochKey.publicKey)).toBe(0xaf0cfe78)
    expect(SignedNote.keyId("EnochRooT", enochKey.publicKey)).not.toBe(0xaf0cfe78)
  })

  it("refuses every truncation and every one-character change of a verifier key", () => {
    for (let i = 0; i <= PETER_VKEY.length; i++)
      for (let j = i + 1; j <= PETER_VKEY.length; j++)
        if (i !== 0 || j !== PETER_VKEY.length)
          expect(tagOf(SignedNote.parseVerifierKey(PETER_VKEY.slice(i, j)))).toBe("VerifierKeyMalformed")
    for (let i = 0; i < PETER_VKEY.length; i++) {
      const bent = PETER_VKEY.slice(0, i) + String.fromCharCode(PETER_VKEY.charCodeAt(i) + 1) + PETER_VKEY.slice(i + 1)
      expect(tagOf(SignedNote.parseVerifierKey(bent))).toBe("VerifierKeyMalformed")
    }
  })

  it("refuses a key of the wrong length or another algorithm even when its id is adjusted to match", () => {
    const long = SignedNote.parseVerifierKey(
      "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
    )
    expect(Either.isLeft(long) && long.left.detail).toMatch(/not canonical base64|32 bytes/)
    const other = SignedNote.parseVerifierKey("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
    expect(Either.isLeft(other) && other.left.detail).toMatch(/not Ed25519/)
  })

  it("refuses names with a space or a plus", () => {
    expect(SignedNote.isKeyName("example.com/log")).toBe(true)
    expect(SignedNote.isKeyName("a b")).toBe(false)
    expect(SignedNote.isKeyName("a+b")).toBe(false)
    expect(SignedNote.isKeyName("a\u00a0b")).toBe(false)
    expect(SignedNote.isKeyName("")).toBe(false)
    expect(() => SignedNote.signer("a b", new Uint8Array(32))).toThrow(RangeError)
    expect(() => SignedNote.signer("ab", new Uint8Array(31))).toThrow(RangeError)
  })
})

describe("SignedNote.signNote / open", () => {
  it("writes exactly the note Go writes", () => {
    expect(SignedNote.signNote(TEXT, [peter])).toEqual(Either.right(`${TEXT}\n${PETER_SIG}`))
  })

  it("opens Go's note with two signers, ignoring the one it does not trust", () => {
    const opened = SignedNote.open(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [peterKey])
    expect(opened).toEqual(Either.right({ text: TEXT, verifiedBy: [peterKey] }))
    const both = SignedNote.open(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [enochKey, peterKey])
    expect(Either.isRight(both) && both.right.verifiedBy).toEqual([peterKey, enochKey])
  })

  it("round-trips a note signed by several keys, opened by any one of them", () => {
    const a = fresh("log.example/a")
    const b = fresh("witness.example/b")
    const note = Either.getOrThrow(SignedNote.signNote("line one\n\nline three\n", [a, b]))
    expect(SignedNote.open(note, [a])).toEqual(Either.right({ text: "line one\n\nline three\n", verifiedBy: [a] }))
    expect(Either.isRight(SignedNote.open(note, [b]))).toBe(true)
    const parsed = Either.getOrThrow(SignedNote.parse(note))
    expect(parsed.signatures.map((s) => [s.name, s.keyId, s.signature.length])).toEqual([
      [a.name, a.keyId, 64],
      [b.name, b.keyId, 64],
    ])
  })

  it("refuses a note no trusted key signed: no trusted keys, an unknown name, or the right name with another key", () => {
    const note = Either.getOrThrow(SignedNote.signNote(TEXT, [peter]))
    expect(tagOf(SignedNote.open(note, []))).toBe("NoteUnverified")
    expect(tagOf(SignedNote.open(note, [fresh("someone.else")]))).toBe("NoteUnverified")
    const impostor = fresh("PeterNeumann")
    const refused = SignedNote.open(note, [impostor])
    expect(tagOf(refused)).toBe("NoteUnverified")
    expect(Either.isLeft(refused) && refused.left.message).toContain("PeterNeumann+c74f20a3")
  })

  it("refuses the whole note when a trusted key's signature fails: altered text, altered signature, wrong key under the right id", () => {
    const note = Either.getOrThrow(SignedNote.signNote(TEXT, [peter]))
    expect(tagOf(SignedNote.open(note.replace("answer", "Answer"), [peterKey]))).toBe("SignatureInvalid")
    expect(tagOf(SignedNote.open(`${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`, [peterKey]))).toBe(
      "SignatureInvalid",
    )
    const sameIdOtherKey = { ...peterKey, publicKey: enochKey.publicKey }
    expect(tagOf(SignedNote.open(note, [sameIdOtherKey]))).toBe("SignatureInvalid")
    // A good signature by another trusted key does not rescue a failing one.
    const other = fresh("other.example")
    const twice = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}${Either.getOrThrow(SignedNote.signNote(TEXT, [other])).slice(TEXT.length + 1)}`
    expect(tagOf(SignedNote.open(twice, [peterKey, other]))).toBe("SignatureInvalid")
  })

  it("refuses to sign a text that is empty, unterminated, or holds a control character, or with no signer", () => {
    expect(tagOf(SignedNote.signNote("abc", [peter]))).toBe("NoteMalformed")
    expect(tagOf(SignedNote.signNote("", [peter]))).toBe("NoteMalformed")
    expect(tagOf(SignedNote.signNote("a\tb\n", [peter]))).toBe("NoteMalformed")
    expect(tagOf(SignedNote.signNote("a\ud800b\n", [peter]))).toBe("NoteMalformed")
    expect(tagOf(SignedNote.signNote(TEXT, []))).toBe("NoteMalformed")
  })
})

describe("SignedNote.parse", () => {
  it.each([
    ["the text alone", TEXT],
    ["a blank line and no signature", `${TEXT}\n`],
    ["a signature line without its newline", `${TEXT}\n${PETER_SIG.slice(0, -1)}`],
    ["a control character", `\u0001${TEXT}\n${PETER_SIG}`],
    [
      "a name with a space",
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`,
    ],
    ["a line that is not a signature", `${TEXT}\n${PETER_SIG}Unexpected line.\n`],
    ["a hyphen for the em dash", `${TEXT}\n${PETER_SIG.replace("—", "-")}`],
    ["base64 that is not canonical", `${TEXT}\n— PeterNeumann x08go/ZJkuBS9UG\n`],
    ["a signature shorter than a key id and one byte", `${TEXT}\n— PeterNeumann AAAAAA==\n`],
    ["more than 100 signatures", `${TEXT}\n${PETER_SIG.repeat(101)}`],
  ])("refuses %s", (_, note) => {
    expect(tagOf(SignedNote.parse(note))).toBe("NoteMalformed")
    expect(tagOf(SignedNote.open(note, [peterKey]))).toBe("NoteMalformed")
  })

  it("refuses bytes that are not UTF-8", () => {
    const bytes = Buffer.concat([Buffer.from([0xff]), Buffer.from(`${TEXT}\n${PETER_SIG}`, "utf8")])
    expect(tagOf(SignedNote.parse(bytes))).toBe("NoteMalformed")
  })

  it("accepts 100 signatures, and reads UTF-8 bytes as their text", () => {
    expect(Either.isRight(SignedNote.parse(`${TEXT}\n${PETER_SIG.repeat(100)}`))).toBe(true)
    const opened = SignedNote.open(Buffer.from(`${TEXT}\n${PETER_SIG}`, "utf8"), [peterKey])
    expect(Either.isRight(opened) && opened.right.text).toBe(TEXT)
  })
})

describe("SignedNote verifier keys of fresh keys", () => {
  it("read back from their text form, whose base64 may hold a +", () => {
    let plus = 0
    for (let i = 0; i < 64; i++) {
      const k = fresh(`log.example/${i}`)
      const text = SignedNote.formatVerifierKey(k)
      if (text.split("+").length > 3) plus += 1
      expect(SignedNote.parseVerifierKey(text)).toEqual(
        Either.right({ name: k.name, keyId: k.keyId, publicKey: k.publicKey }),
      )
    }
    // 44 base64 characters each: a + among them in some of 64 keys is all but certain.
    expect(plus).toBeGreaterThan(0)
  })
})
