/**
 * Column codecs. Rows are decoded through Schema, so damage is `Corrupt`, never a default: pg
 * returns int8 and COUNT as text, SQLite booleans as 0/1, and both may hold bytes of any length.
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import * as Digest from "../../domain/Digest.js"
import * as Json from "../../domain/Json.js"
import { Corrupt } from "../../errors/StoreError.js"

/**
 * BIGINT / INTEGER: a number (sqlite, pg int4) or decimal text (pg int8, COUNT), within safe range.
 * One declared parser rather than a union of `Number` and `NumberFromString` with two filters:
 * every timestamp, version and count of every row goes through it, and the union cost about 1 µs
 * a column.
 */
export const Int8 = Schema.declare([], {
  decode: () => (u, _, ast) => {
    const n = typeof u === "number" ? u : typeof u === "string" && DECIMAL.test(u) ? Number(u) : Number.NaN
    return Number.isSafeInteger(n)
      ? ParseResult.succeed(n)
      : ParseResult.fail(
          new ParseResult.Type(ast, u, "expected an integer in the safe range, as a number or decimal text"),
        )
  },
  encode: () => (n, _, ast) =>
    Number.isSafeInteger(n) ? ParseResult.succeed(n) : ParseResult.fail(new ParseResult.Type(ast, n)),
})

const DECIMAL = /^-?\d+$/

/** A count or amount: a negative one reads as 0 (G4). */
export const Count = Schema.transform(Int8, Schema.NonNegativeInt, {
  strict: true,
  decode: (n) => Math.max(0, n),
  encode: (n) => n,
})

/** BOOLEAN / INTEGER 0-1. */
export const Bool = Schema.Union(
  Schema.Boolean,
  Schema.transform(Schema.Literal(0, 1), Schema.Boolean, {
    strict: true,
    decode: (n) => n === 1,
    encode: (b) => (b ? 1 : 0),
  }),
)

/** JSON text → JSON value; unparsable text is damage. */
export const JsonText = Schema.transformOrFail(Schema.String, Json.Json, {
  strict: true,
  decode: (text, _, ast) =>
    Either.match(Json.parse(text), {
      onLeft: (detail) => ParseResult.fail(new ParseResult.Type(ast, text, detail)),
      onRight: ParseResult.succeed,
    }),
  encode: (value) => ParseResult.succeed(JSON.stringify(value)),
})

/** BYTEA / BLOB of exactly 32 bytes → digest. */
export const DigestBytes = Schema.transformOrFail(Schema.Uint8ArrayFromSelf, Digest.Digest, {
  strict: true,
  decode: (bytes, _, ast) =>
    Either.match(Digest.fromBytes(bytes), {
      onLeft: (detail) => ParseResult.fail(new ParseResult.Type(ast, bytes, detail)),
      onRight: ParseResult.succeed,
    }),
  encode: (hex) => ParseResult.succeed(Buffer.from(hex, "hex")),
})

/** A digest as a bind parameter (a Buffer binds as BYTEA on pg and BLOB on sqlite). */
export const digestParam = (digest: Digest.Digest): Buffer => Buffer.from(digest, "hex")

/** Decodes rows with `schema`; a row that does not decode is `Corrupt`, naming what was read. */
export const decodeRows = <A, I>(schema: Schema.Schema<A, I>, what: string) => {
  const decode = arrayDecoder(schema)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, Corrupt> =>
    Effect.mapError(decode(rows), (e) => new Corrupt({ detail: `${what}: ${e.message}`, seq: 0 }))
}

// internal

/**
 * Stores call `decodeRows` inline, once per statement; compiling the array decoder each time cost
 * ~10x the decode itself (measured by the benchmarks), so each row schema compiles once.
 */
const decoders = new WeakMap<object, (rows: unknown) => Effect.Effect<ReadonlyArray<unknown>, ParseResult.ParseError>>()

const arrayDecoder = <A, I>(schema: Schema.Schema<A, I>) => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknown(Schema.Array(schema)) as (
      rows: unknown,
    ) => Effect.Effect<ReadonlyArray<unknown>, ParseResult.ParseError>
    decoders.set(schema, decode)
  }
  return decode as (rows: unknown) => Effect.Effect<ReadonlyArray<A>, ParseResult.ParseError>
}
