import { generateKeyPairSync } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import { Digest } from "../../src/domain/Digest.js"
import * as SignedNote from "../../src/domain/SignedNote.js"

// The example body of the C2SP tlog-checkpoint spec.
const SPEC_BODY = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
const ROOT = Digest.make(Buffer.from("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "base64").toString("hex"))

const key = (name: string): SignedNote.Signer => {
  const { privateKey } = generateKeyPairSync("ed25519")
  return SignedNote.signer(name, Buffer.from(privateKey.export({ format: "jwk" }).d as string, "base64url"))
}

const tagOf = (result: Either.Either<unknown, { readonly _tag: string }>): string | undefined =>
  Either.isLeft(result) ? result.left._tag : undefined

describe("Checkpoint.text / parse", () => {
  it("reads the spec's example and writes it back byte for byte", () => {
    const parsed = Either.getOrThrow(Checkpoint.parse(SPEC_BODY))
    expect([parsed.origin, parsed.size, parsed.root, parsed.extensions]).toEqual([
      "example.com/behind-the-sofa",
      20852163,
      ROOT,
      [],
    ])
    expect(Checkpoint.text(parsed)).toBe(SPEC_BODY)
  })

  it("writes the empty tree as size 0 and keeps extension lines in order", () => {
    const cp = new Checkpoint.Checkpoint({
      origin: "agentplane.example/acme",
      size: 0,
      root: Digest.make("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
      extensions: ["one", "two"],
    })
    expect(Checkpoint.text(cp)).toBe(
      "agentplane.example/acme\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\none\ntwo\n",
    )
    expect(Checkpoint.parse(Checkpoint.text(cp))).toEqual(Either.right(cp))
  })

  it.each([
    ["no final newline", SPEC_BODY.slice(0, -1)],
    ["two lines", "example.com/log\n5\n"],
    ["an empty origin", `\n${SPEC_BODY.slice(SPEC_BODY.indexOf("\n") + 1)}`],
    ["a size with a leading zero", SPEC_BODY.replace("20852163", "020852163")],
    ["a negative size", SPEC_BODY.replace("20852163", "-1")],
    ["a size past 2^53", SPEC_BODY.replace("20852163", "9007199254740993")],
    ["a size with a sign", SPEC_BODY.replace("20852163", "+5")],
    [
      "a root of 31 bytes",
      SPEC_BODY.replace("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", Buffer.alloc(31).toString("base64")),
    ],
    ["a root in unpadded base64", SPEC_BODY.replace("jxq2I=", "jxq2I")],
    ["a root in URL-safe base64", SPEC_BODY.replace("om/Xa", "om_Xa")],
    ["an empty extension line", `${SPEC_BODY}\n`],
    ["a control character in the origin", SPEC_BODY.replace("sofa", "so\tfa")],
  ])("refuses %s", (_, body) => {
    expect(tagOf(Checkpoint.parse(body))).toBe("CheckpointMalformed")
  })

  it("cannot be built with a line that would split the text", () => {
    expect(() => new Checkpoint.Checkpoint({ origin: "a\nb", size: 1, root: ROOT })).toThrow()
    expect(() => new Checkpoint.Checkpoint({ origin: "a", size: 1, root: ROOT, extensions: [""] })).toThrow()
  })
})

describe("Checkpoint.sign / open", () => {
  const log = key("agentplane.example/acme")
  const cp = new Checkpoint.Checkpoint({ origin: "agentplane.example/acme", size: 42, root: ROOT })

  it("opens what it signs, under the log's verifier key read from its text form", () => {
    const note = Either.getOrThrow(Checkpoint.sign(cp, [log]))
    expect(note.startsWith(`${Checkpoint.text(cp)}\n— agentplane.example/acme `)).toBe(true)
    const trusted = Either.getOrThrow(SignedNote.parseVerifierKey(SignedNote.formatVerifierKey(log)))
    expect(Checkpoint.open(note, [trusted])).toEqual(Either.right(cp))
  })

  it("refuses a checkpoint whose size or root was changed after signing", () => {
    const note = Either.getOrThrow(Checkpoint.sign(cp, [log]))
    expect(tagOf(Checkpoint.open(note.replace("\n42\n", "\n43\n"), [log]))).toBe("SignatureInvalid")
    expect(tagOf(Checkpoint.open(note.replace("CsUY", "DsUY"), [log]))).toBe("SignatureInvalid")
  })

  it("refuses a checkpoint signed by a key it does not trust", () => {
    const note = Either.getOrThrow(Checkpoint.sign(cp, [key("agentplane.example/acme")]))
    expect(tagOf(Checkpoint.open(note, [log]))).toBe("NoteUnverified")
  })

  it("refuses a well-signed note whose text is not a checkpoint", () => {
    const note = Either.getOrThrow(SignedNote.signNote("hello\n", [log]))
    expect(tagOf(Checkpoint.open(note, [log]))).toBe("CheckpointMalformed")
  })
})
