/**
 * JSON values as agentplane stores them: any JSON, kept as JSON text.
 */
import { Either, Schema } from "effect"

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/**
 * A JSON value, checked all the way down: no `undefined`, functions, non-finite numbers, or
 * objects that are not plain (a Date or a Map would be written as `{}`). Checked in place rather
 * than rebuilt, because rebuilding an object assigns its members, and assigning a member named
 * `__proto__` sets the prototype instead of keeping the member.
 */
export const Json: Schema.Schema<Json> = Schema.declare((u: unknown): u is Json => isJson(u), {
  identifier: "Json",
  description: "any JSON value",
})

const isJson = (u: unknown): boolean => {
  if (u === null || typeof u === "boolean" || typeof u === "string") return true
  if (typeof u === "number") return Number.isFinite(u)
  if (Array.isArray(u)) return u.every(isJson)
  if (typeof u !== "object") return false
  const proto = Object.getPrototypeOf(u)
  if (proto !== Object.prototype && proto !== null) return false
  return Object.values(u).every(isJson)
}

const decodeJson = Schema.decodeUnknownEither(Json)

/** JSON text → value; `Left` carries a message naming what is wrong with the text. */
export const parse = (text: string): Either.Either<Json, string> => {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (e) {
    return Either.left(`not JSON text: ${e instanceof Error ? e.message : String(e)}`)
  }
  return Either.mapLeft(decodeJson(raw), () => "not a JSON value")
}

/** Value → JSON text; `Left` when the value is not JSON (NaN, undefined, a function, …). */
export const stringify = (value: unknown): Either.Either<string, string> =>
  Either.map(
    Either.mapLeft(decodeJson(value), (e) => `not a JSON value: ${e.message}`),
    (json) => JSON.stringify(json),
  )
