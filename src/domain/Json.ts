/**
 * JSON values as agentplane stores them: any JSON, kept as JSON text.
 */
import { Either, Schema } from "effect"

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** A JSON value, checked all the way down: no `undefined`, functions, or non-finite numbers. */
export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Finite,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) }),
)

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
