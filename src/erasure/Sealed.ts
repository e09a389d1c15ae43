/**
 * A sealed payload: a JSON value encrypted under its scope's data key and written in its place as
 * one string, `agentplane.sealed:1:<scope, base64url>:<box, base64>`. Being a string, it fits
 * every payload field (text fields and JSON fields alike), so records keep their schema and the
 * chain, computed over the stored bytes, commits to the ciphertext.
 *
 * The scope is in the clear: it names only ids the record's structure already shows, and lets a
 * reader (or `drill`) find the key without knowing which store the value came from. The box's
 * associated data is `<tenant>/<scope>`, so a sealed value moved under another tenant or scope
 * fails to open rather than opening there.
 *
 * Decision: a string that does not start with the prefix is plaintext (written before a key ring
 * was configured, or structure such as a fresh case's initial state) and reads back as it is.
 */
import { Either } from "effect"
import * as Json from "../domain/Json.js"
import * as Aead from "./Aead.js"

export const PREFIX = "agentplane.sealed:1:"

/** Whether `value` is a sealed payload. */
export const isSealed = (value: unknown): value is string => typeof value === "string" && value.startsWith(PREFIX)

const aad = (tenant: string, scope: string) => `${PREFIX}${tenant}/${scope}`

/** `value` sealed under `key`, the data key of `scope` in `tenant`. */
export const seal = (tenant: string, scope: string, key: Uint8Array, value: Json.Json): string => {
  const box = Aead.seal(key, aad(tenant, scope), Buffer.from(JSON.stringify(value), "utf8"))
  return `${PREFIX}${Buffer.from(scope, "utf8").toString("base64url")}:${Buffer.from(box).toString("base64")}`
}

/** The scope a sealed value names; `Left` when the text is not a well-formed sealed value. */
export const scopeOf = (sealed: string): Either.Either<string, string> => {
  const [scope, box] = parts(sealed)
  return scope === undefined || box === undefined || scope === ""
    ? Either.left("a sealed value is prefix, scope and box")
    : Either.right(Buffer.from(scope, "base64url").toString("utf8"))
}

/** The value inside `sealed`, opened with its scope's data key; `Left` when it does not authenticate. */
export const open = (tenant: string, key: Uint8Array, sealed: string): Either.Either<Json.Json, string> =>
  Either.gen(function* () {
    const scope = yield* scopeOf(sealed)
    const box = Buffer.from(parts(sealed)[1] ?? "", "base64")
    const plain = yield* Aead.open(key, aad(tenant, scope), box)
    return yield* Json.parse(Buffer.from(plain).toString("utf8"))
  })

const parts = (sealed: string) => sealed.slice(PREFIX.length).split(":")
