/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 signatures: the envelope a log checkpoint
 * travels in. A note is a text ending in a newline, a blank line, and one or more lines
 * `— <key name> <base64(key id ‖ signature)>` (em dash U+2014). The key id is the first four
 * bytes, big-endian, of SHA-256(key name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key), 0x01 being the
 * spec's Ed25519 signature type. A verifier key is shared as the text
 * `<name>+<8 hex digits of the id>+<base64(0x01 ‖ public key)>` (Go's `sumdb/note` form, which
 * C2SP tools read).
 *
 * Signing lives here, in the domain, with `node:crypto`: an Ed25519 signature is a deterministic
 * function of the key and the bytes, computation like the SHA-256 in `Digest`, and keeping it
 * beside parsing keeps the byte-exact format in one module. Where a key comes from (the key
 * ring, `serve --log-key`) is I/O and stays with the caller, which hands over the 32-byte seed.
 *
 * Opening follows the spec: signatures by unknown keys (name or id not both matching) are
 * ignored; a signature by a known key that fails refuses the whole note; a note with no verified
 * signature by a known key is refused.
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto"
import { Either } from "effect"
import type { NoteError } from "../errors/LogError.js"
import { NoteMalformed, NoteUnverified, SignatureInvalid, VerifierKeyMalformed } from "../errors/LogError.js"

/** The signature type byte C2SP assigns to Ed25519. */
export const ED25519 = 0x01

/** The most signatures a note may carry (the spec asks for at least 16; Go's `note` caps at 100). */
export const MAX_SIGNATURES = 100

/** A key a verifier trusts: its name, id and 32-byte Ed25519 public key. */
export interface VerifierKey {
  readonly name: string
  readonly keyId: number
  readonly publicKey: Uint8Array
}

/** A signing key: its verifier key and the private half. */
export interface Signer extends VerifierKey {
  readonly privateKey: KeyObject
}

/** One signature line: who claims to have signed, and the signature bytes after the key id. */
export interface Signature {
  readonly name: string
  readonly keyId: number
  readonly signature: Uint8Array
}

/** A note as parsed, signatures not yet checked. */
export interface Note {
  readonly text: string
  readonly signatures: ReadonlyArray<Signature>
}

/** A note whose text a trusted key vouches for, and the trusted keys that signed it. */
export interface Opened {
  readonly text: string
  readonly verifiedBy: ReadonlyArray<VerifierKey>
}

/** Whether `name` may name a key: non-empty, no Unicode space, no `+`, no control character. */
export const isKeyName = (name: string): boolean => name.length > 0 && !/[\s+\p{Cc}]/u.test(name)

/** SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key), first four bytes big-endian. */
export const keyId = (name: string, publicKey: Uint8Array): number =>
  createHash("sha256")
    .update(name, "utf8")
    .update(new Uint8Array([0x0a, ED25519]))
    .update(publicKey)
    .digest()
    .readUInt32BE(0)

/** The id as the verifier-key text shows it: 8 lowercase hex digits. */
export const showKeyId = (id: number): string => id.toString(16).padStart(8, "0")

/** A signer named `name` from a 32-byte Ed25519 seed (RFC 8032's private key). */
export const signer = (name: string, seed: Uint8Array): Signer => {
  if (!isKeyName(name)) throw new RangeError(`${JSON.stringify(name)} cannot name a key: empty, a space or a +`)
  if (seed.length !== 32) throw new RangeError(`an Ed25519 seed is 32 bytes, not ${seed.length}`)
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: "der", type: "pkcs8" })
  const jwk = createPublicKey(privateKey).export({ format: "jwk" })
  const publicKey = new Uint8Array(Buffer.from(jwk.x as string, "base64url"))
  return { name, keyId: keyId(name, publicKey), publicKey, privateKey }
}

/** `<name>+<hex id>+<base64(0x01 ‖ public key)>`. */
export const formatVerifierKey = (key: VerifierKey): string =>
  `${key.name}+${showKeyId(key.keyId)}+${Buffer.concat([new Uint8Array([ED25519]), key.publicKey]).toString("base64")}`

/** A verifier key from its text; its id must be the one its name and key hash to. */
export const parseVerifierKey = (text: string): Either.Either<VerifierKey, VerifierKeyMalformed> => {
  const fail = (detail: string) => Either.left(new VerifierKeyMalformed({ detail }))
  // Names hold no `+`, ids are hex, but base64 may hold `+`: the key is everything after the second.
  const first = text.indexOf("+")
  const second = text.indexOf("+", first + 1)
  if (first < 0 || second < 0) return fail("expected <name>+<hex key id>+<base64 key>")
  const name = text.slice(0, first)
  const hex = text.slice(first + 1, second)
  const encoded = text.slice(second + 1)
  if (!isKeyName(name)) return fail(`${JSON.stringify(name)} cannot name a key`)
  if (!/^[0-9a-f]{8}$/.test(hex)) return fail(`key id ${JSON.stringify(hex)} is not 8 lowercase hex digits`)
  const key = base64(encoded)
  if (key === undefined) return fail("the key is not canonical base64")
  if (key[0] !== ED25519) return fail(`signature type ${key[0]} is not Ed25519 (1)`)
  if (key.length !== 33) return fail(`an Ed25519 public key is 32 bytes, not ${key.length - 1}`)
  const publicKey = key.subarray(1)
  const id = keyId(name, publicKey)
  if (showKeyId(id) !== hex) return fail(`key id ${hex} is not the id of this name and key (${showKeyId(id)})`)
  return Either.right({ name, keyId: id, publicKey })
}

/** The note of `text` signed by each of `signers`, in order. */
export const signNote = (text: string, signers: ReadonlyArray<Signer>): Either.Either<string, NoteMalformed> => {
  const bad = checkText(text)
  if (bad !== undefined) return Either.left(new NoteMalformed({ detail: bad }))
  if (signers.length === 0 || signers.length > MAX_SIGNATURES)
    return Either.left(new NoteMalformed({ detail: `a note has 1 to ${MAX_SIGNATURES} signatures` }))
  const message = Buffer.from(text, "utf8")
  const lines = signers.map((s) => {
    const id = Buffer.alloc(4)
    id.writeUInt32BE(s.keyId)
    return `— ${s.name} ${Buffer.concat([id, sign(null, message, s.privateKey)]).toString("base64")}\n`
  })
  return Either.right(`${text}\n${lines.join("")}`)
}

/** A note's text and signature lines, checked for syntax only. */
export const parse = (note: string | Uint8Array): Either.Either<Note, NoteMalformed> => {
  const fail = (detail: string) => Either.left(new NoteMalformed({ detail }))
  const message = typeof note === "string" ? note : utf8(note)
  if (message === undefined) return fail("not valid UTF-8")
  // The text may hold blank lines itself; the last one separates it from the signatures.
  const split = message.lastIndexOf("\n\n")
  if (split < 0) return fail("no blank line before the signatures")
  const text = message.slice(0, split + 1)
  const bad = checkText(text)
  if (bad !== undefined) return fail(bad)
  const block = message.slice(split + 2)
  if (!block.endsWith("\n")) return fail("the last signature line does not end in a newline")
  const lines = block.slice(0, -1).split("\n")
  if (lines.length > MAX_SIGNATURES) return fail(`more than ${MAX_SIGNATURES} signatures`)
  const signatures: Array<Signature> = []
  for (const line of lines) {
    const m = /^— (\S+) (\S+)$/u.exec(line)
    if (m === null) return fail(`${JSON.stringify(line)} is not a signature line "— <name> <base64>"`)
    const [, name, encoded] = m as unknown as [string, string, string]
    if (!isKeyName(name)) return fail(`${JSON.stringify(name)} cannot name a key`)
    const bytes = base64(encoded)
    if (bytes === undefined || bytes.length < 5)
      return fail(`the signature by ${name} is not base64 of a key id and a signature`)
    signatures.push({ name, keyId: Buffer.from(bytes).readUInt32BE(0), signature: bytes.subarray(4) })
  }
  return Either.right({ text, signatures })
}

/** The note's text, if a key among `trusted` signed it and every signature by a trusted key verifies. */
export const open = (
  note: string | Uint8Array,
  trusted: ReadonlyArray<VerifierKey>,
): Either.Either<Opened, NoteError> => {
  const parsed = parse(note)
  if (Either.isLeft(parsed)) return Either.left(parsed.left)
  const { text, signatures } = parsed.right
  const message = Buffer.from(text, "utf8")
  const verifiedBy: Array<VerifierKey> = []
  for (const s of signatures) {
    const key = trusted.find((k) => k.name === s.name && k.keyId === s.keyId)
    if (key === undefined) continue
    const ok = s.signature.length === 64 && verify(null, message, publicKeyObject(key.publicKey), s.signature)
    if (!ok) return Either.left(new SignatureInvalid({ name: s.name, keyId: showKeyId(s.keyId) }))
    if (!verifiedBy.includes(key)) verifiedBy.push(key)
  }
  if (verifiedBy.length === 0)
    return Either.left(new NoteUnverified({ signers: signatures.map((s) => `${s.name}+${showKeyId(s.keyId)}`) }))
  return Either.right({ text, verifiedBy })
}

/** A node `KeyObject` for a raw 32-byte Ed25519 public key. */
export const publicKeyObject = (raw: Uint8Array): KeyObject =>
  createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" })

/** Whether `text` holds an ASCII control character (below U+0020) other than those in `allowed`. */
export const hasControl = (text: string, allowed = ""): boolean => {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x20 && !allowed.includes(text.charAt(i))) return true
  return false
}

// internal

// The fixed DER header of a PKCS #8 Ed25519 private key (RFC 8410); the 32-byte seed follows it.
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex")

/** Why `text` cannot be a note's text, or nothing. */
const checkText = (text: string): string | undefined => {
  if (text.length === 0 || !text.endsWith("\n")) return "the text must be non-empty and end in a newline"
  // The signed-note spec forbids every ASCII control character but the newline.
  if (hasControl(text, "\n")) return "the text holds a control character"
  // A lone surrogate has no UTF-8 encoding: it would be signed as U+FFFD and never verify as sent.
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text))
    return "the text is not valid Unicode"
  return undefined
}

const decoder = new TextDecoder("utf-8", { fatal: true })

const utf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

/** Standard base64 (RFC 4648 §4) that re-encodes to itself: one text per byte string. */
const base64 = (text: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined
  const bytes = Buffer.from(text, "base64")
  return bytes.toString("base64") === text ? new Uint8Array(bytes) : undefined
}
