/**
 * The key-encryption key (KEK): 32 bytes the operator supplies, base64-encoded, in
 * `AGENTPLANE_KEK` or in the file `AGENTPLANE_KEK_FILE` names. It only wraps data keys; it never
 * touches a payload, so it can be kept in a secret manager and rotated by re-wrapping (later).
 */
import { createHash, randomBytes } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { Config, Effect, Either, Option, Redacted } from "effect"
import { KekInvalid } from "../errors/ErasureError.js"
import * as Aead from "./Aead.js"

export interface Kek {
  /** A short public fingerprint, stored beside each wrapped key so a wrong KEK is named, not mistaken for damage. */
  readonly id: string
  readonly bytes: Uint8Array
}

/** A KEK from its base64 text (surrounding whitespace ignored); anything but 32 bytes is `KekInvalid`. */
export const fromBase64 = (text: string, where: string): Either.Either<Kek, KekInvalid> => {
  const trimmed = text.trim()
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    return Either.left(new KekInvalid({ detail: `${where} is not base64; give 32 random bytes, base64-encoded` }))
  }
  const bytes = Buffer.from(trimmed, "base64")
  if (bytes.length !== Aead.KEY_BYTES) {
    return Either.left(
      new KekInvalid({
        detail: `${where} decodes to ${bytes.length} bytes; give exactly ${Aead.KEY_BYTES} (e.g. openssl rand -base64 32)`,
      }),
    )
  }
  return Either.right(make(bytes))
}

export const make = (bytes: Uint8Array): Kek => ({
  id: createHash("sha256").update("agentplane.kek:1:").update(bytes).digest("hex").slice(0, 16),
  bytes,
})

/**
 * The operator's KEK from `AGENTPLANE_KEK` or `AGENTPLANE_KEK_FILE`; none when neither is set
 * (no key ring: nothing is sealed). Both set is refused rather than one silently winning.
 */
export const fromEnvironment: Effect.Effect<Option.Option<Kek>, KekInvalid> = Effect.gen(function* () {
  const [inline, file] = yield* Config.all([
    Config.option(Config.redacted("AGENTPLANE_KEK")),
    Config.option(Config.string("AGENTPLANE_KEK_FILE")),
  ]).pipe(Effect.mapError((e) => new KekInvalid({ detail: String(e) })))
  if (Option.isSome(inline) && Option.isSome(file)) {
    return yield* new KekInvalid({ detail: "both AGENTPLANE_KEK and AGENTPLANE_KEK_FILE are set; set one" })
  }
  if (Option.isSome(inline)) return Option.some(yield* fromBase64(Redacted.value(inline.value), "AGENTPLANE_KEK"))
  if (Option.isSome(file)) return Option.some(yield* fromFile(file.value))
  return Option.none()
})

/** The KEK in `path` (base64 text). */
export const fromFile = (path: string): Effect.Effect<Kek, KekInvalid> =>
  Effect.try({
    try: () => readFileSync(path, "utf8"),
    catch: (e) => new KekInvalid({ detail: `cannot read the KEK file ${path}: ${String(e)}` }),
  }).pipe(Effect.flatMap((text) => fromBase64(text, `the KEK file ${path}`)))

/**
 * The KEK file that belongs to the SQLite store `store`: `<store>.kek`, beside it. `serve` writes
 * it on a fresh store (`create`), and every verb and the embedded default read it when no KEK is
 * given, so a store sealed out of the box opens everywhere it is opened.
 */
export const besideStore = (store: string): string => `${store}.kek`

/** The KEK in `path` when the file exists; none when it does not. */
export const fromFileIfPresent = (path: string): Effect.Effect<Option.Option<Kek>, KekInvalid> =>
  Effect.suspend(() => (existsSync(path) ? Effect.asSome(fromFile(path)) : Effect.succeedNone))

/**
 * A new random KEK written to `path` (base64, mode 0600: only its owner reads it). Exclusive
 * create: a file already there (another process's start that won the race) is read, not replaced,
 * since replacing it would strand whatever was sealed under the first.
 */
export const create = (path: string): Effect.Effect<Kek, KekInvalid> =>
  Effect.suspend(() => {
    const bytes = randomBytes(Aead.KEY_BYTES)
    try {
      writeFileSync(path, `${bytes.toString("base64")}\n`, { flag: "wx", mode: 0o600 })
      return Effect.succeed(make(bytes))
    } catch (e) {
      if ((e as { code?: unknown }).code === "EEXIST") return fromFile(path)
      return Effect.fail(new KekInvalid({ detail: `cannot write the KEK file ${path}: ${String(e)}` }))
    }
  })

/** The associated data of a wrapped key: it belongs to exactly this scope of this tenant. */
const aad = (fullScope: string) => `agentplane.key:1:${fullScope}`

/** `key` wrapped for `fullScope` (`<tenant>/<unit>`). */
export const wrap = (kek: Kek, fullScope: string, key: Uint8Array): Uint8Array =>
  Aead.seal(kek.bytes, aad(fullScope), key)

/** The data key inside `wrapped`; `Left` when it does not authenticate for `fullScope` under this KEK. */
export const unwrap = (kek: Kek, fullScope: string, wrapped: Uint8Array): Either.Either<Uint8Array, string> =>
  Aead.open(kek.bytes, aad(fullScope), wrapped)
