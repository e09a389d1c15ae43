/**
 * JSON values as agentplane stores them: any JSON, kept as JSON text.
 */
import { Either, Schema } from "effect"
import * as JsonText from "./JsonText.js"
import type * as JsonValue from "./JsonValue.js"
import { MAX_JSON_DEPTH } from "./Limits.js"
import { isWellFormed } from "./Text.js"

export type Json = JsonValue.Json

/**
 * A JSON value, checked all the way down: no `undefined`, functions, non-finite numbers, or
 * objects that are not plain (a Date or a Map would be written as `{}`); every string and member
 * name well-formed (no lone surrogate, which has no UTF-8 form and which PostgreSQL and SQLite
 * store differently); at most `Limits.MAX_JSON_DEPTH` levels deep. Checked in place rather than
 * rebuilt, because rebuilding an object assigns its members, and assigning a member named
 * `__proto__` sets the prototype instead of keeping the member.
 */
export const Json: Schema.Schema<Json> = Schema.declare((u: unknown): u is Json => problemOf(u) === undefined, {
  identifier: "Json",
  description: `any JSON value, at most ${MAX_JSON_DEPTH} levels deep`,
  message: (issue) => `not a JSON value: ${problemOf(issue.actual) ?? "unexpected value"}`,
})

/**
 * What makes `u` not a JSON value, with its path, or `undefined` when it is one. A loop over an
 * explicit stack, not recursion: 4,000 nested arrays overflowed the recursive check (an empty 500
 * in HTTP). The depth bound also ends the walk of a value that contains itself.
 */
export const problemOf = (u: unknown): string | undefined => {
  const stack: Array<Item> = [{ value: u, depth: 0, parent: undefined, at: "" }]
  for (;;) {
    const item = stack.pop()
    if (item === undefined) return undefined
    const { value, depth } = item
    if (value === null || typeof value === "boolean") continue
    if (typeof value === "string") {
      if (!isWellFormed(value)) return `a string contains a lone surrogate (text with no UTF-8 form) at ${pathOf(item)}`
      continue
    }
    if (typeof value === "number") {
      if (!Number.isFinite(value)) return `${value} is not a JSON number at ${pathOf(item)}`
      continue
    }
    if (typeof value !== "object") return `a ${typeof value} is not JSON at ${pathOf(item)}`
    if (depth >= MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH} levels at ${pathOf(item)}`
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], depth: depth + 1, parent: item, at: i })
      continue
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) {
      return `an object that is not plain (${proto?.constructor?.name ?? "unknown"}) at ${pathOf(item)}`
    }
    const keys = Object.keys(value)
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string
      if (!isWellFormed(key))
        return `a member name contains a lone surrogate (text with no UTF-8 form) at ${pathOf(item)}`
      stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, parent: item, at: key })
    }
  }
}

const decodeJson = Schema.decodeUnknownEither(Json)

/**
 * JSON text → value, strictly (`JsonText.parse`: no duplicated member names, no lone surrogates,
 * at most `MAX_JSON_DEPTH` levels); `Left` names what is wrong and where.
 */
export const parse = (text: string): Either.Either<Json, string> =>
  Either.mapLeft(JsonText.parse(text), (e) => `not JSON text: ${e}`)

/** Value → JSON text; `Left` when the value is not JSON (NaN, undefined, a function, …). */
export const stringify = (value: unknown): Either.Either<string, string> =>
  Either.map(
    Either.mapLeft(decodeJson(value), (e) => `not a JSON value: ${e.message}`),
    (json) => JSON.stringify(json),
  )

// internal

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** A value waiting to be checked, and where it sits: its container and its index or member name there. */
interface Item {
  readonly value: unknown
  readonly depth: number
  readonly parent: Item | undefined
  readonly at: string | number
}

/** `$`, `$.a`, `$["a b"][2]`: built only when a check fails, by walking up the containers. */
const pathOf = (item: Item): string => {
  const segments: Array<string> = []
  for (let at: Item | undefined = item; at?.parent !== undefined; at = at.parent) {
    if (typeof at.at === "number") segments.push(`[${at.at}]`)
    else {
      const shown = at.at.length > 64 ? `${at.at.slice(0, 64)}…` : at.at
      segments.push(IDENTIFIER.test(shown) ? `.${shown}` : `[${JSON.stringify(shown)}]`)
    }
  }
  return `$${segments.reverse().join("")}`
}
