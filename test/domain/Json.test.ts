import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Schema } from "effect"
import * as Json from "../../src/domain/Json.js"
import { MAX_JSON_DEPTH } from "../../src/domain/Limits.js"

describe("Json.parse", () => {
  for (const text of ["", "{", "{'a':1}", "[1,]", "undefined", "NaN", "{a:1}", "01", "tru"]) {
    it(`refuses unparsable text ${JSON.stringify(text)} with a Left`, () => {
      const result = Json.parse(text)
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) expect(result.left.length).toBeGreaterThan(0)
    })
  }

  it("parses scalars, arrays and objects", () => {
    expect(Json.parse("null")).toEqual(Either.right(null))
    expect(Json.parse("true")).toEqual(Either.right(true))
    expect(Json.parse("-1.5e3")).toEqual(Either.right(-1500))
    expect(Json.parse('"é"')).toEqual(Either.right("é"))
    expect(Json.parse(' {"a": [1, {"b": null}], "c": "x"} ')).toEqual(Either.right({ a: [1, { b: null }], c: "x" }))
  })

  it('keeps every member of an object, including one named "__proto__"', () => {
    const result = Json.parse('{"__proto__":{"x":1},"a":2}')
    expect(Either.isRight(result)).toBe(true)
    if (Either.isRight(result)) {
      const value = result.right as Record<string, unknown>
      expect(Object.keys(value).sort()).toEqual(["__proto__", "a"])
      expect(Object.getOwnPropertyDescriptor(value, "__proto__")?.value).toEqual({ x: 1 })
    }
  })
})

describe("Json.stringify", () => {
  it("refuses NaN, ±Infinity and undefined with a Left", () => {
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, undefined]) {
      expect(Either.isLeft(Json.stringify(value)), String(value)).toBe(true)
    }
  })

  it("refuses non-JSON values nested anywhere", () => {
    for (const value of [{ a: Number.NaN }, [1, undefined], { a: { b: () => 1 } }, [Symbol("s")], { n: 10n }]) {
      expect(Either.isLeft(Json.stringify(value))).toBe(true)
    }
  })

  it("refuses functions, symbols and bigints", () => {
    for (const value of [() => 1, Symbol("s"), 10n]) expect(Either.isLeft(Json.stringify(value))).toBe(true)
  })

  it("refuses objects that are not plain JSON objects rather than writing {}", () => {
    expect(Json.stringify(new Date(0))).not.toEqual(Either.right("{}"))
    expect(Json.stringify(new Map([["a", 1]]))).not.toEqual(Either.right("{}"))
  })

  it("writes JSON text", () => {
    expect(Json.stringify({ a: [1, "x", null, true] })).toEqual(Either.right('{"a":[1,"x",null,true]}'))
    expect(Json.stringify("é")).toEqual(Either.right('"é"'))
  })

  it('keeps a member named "__proto__"', () => {
    const value = JSON.parse('{"__proto__":1,"a":2}') as unknown
    const result = Json.stringify(value)
    expect(Either.isRight(result)).toBe(true)
    if (Either.isRight(result)) expect(JSON.parse(result.right)).toEqual(value)
    if (Either.isRight(result)) expect(Object.keys(JSON.parse(result.right) as object)).toContain("__proto__")
  })
})

/** JSON has one zero: -0 is written "0" and reads back as 0, so compare with -0 replaced by 0. */
const withoutNegativeZero = (value: unknown): unknown =>
  Object.is(value, -0)
    ? 0
    : Array.isArray(value)
      ? value.map(withoutNegativeZero)
      : typeof value === "object" && value !== null
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNegativeZero(v)]))
        : value

describe("Json round trip", () => {
  it("parse ∘ stringify gives back any JSON value (property)", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.jsonValue(), (value) => {
        const text = Json.stringify(value)
        expect(Either.isRight(text)).toBe(true)
        if (Either.isRight(text)) expect(Json.parse(text.right)).toEqual(Either.right(withoutNegativeZero(value)))
      }),
      { numRuns: 300 },
    )
  })

  it("stringify ∘ parse preserves the meaning of JSON text (property)", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.json(), (text) => {
        const value = Json.parse(text)
        expect(Either.isRight(value)).toBe(true)
        if (Either.isRight(value)) {
          const back = Json.stringify(value.right)
          expect(Either.isRight(back) && JSON.parse(back.right)).toEqual(JSON.parse(text))
        }
      }),
      { numRuns: 300 },
    )
  })

  it(`round-trips values nested ${MAX_JSON_DEPTH} levels deep`, () => {
    let value: Json.Json = "leaf"
    for (let i = 0; i < MAX_JSON_DEPTH; i++) value = i % 2 === 0 ? [value] : { [`k${i}`]: value }
    const text = Json.stringify(value)
    expect(Either.isRight(text)).toBe(true)
    if (Either.isRight(text)) expect(Json.parse(text.right)).toEqual(Either.right(value))
  })
})

/** `depth` arrays around `leaf`, built without recursion. */
const nestedValue = (depth: number, leaf: Json.Json = 1): Json.Json => {
  let value: Json.Json = leaf
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

const decodeJson = Schema.decodeUnknownEither(Json.Json)

describe("Json (the schema)", () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more, naming the depth`, () => {
    expect(Either.isRight(decodeJson(nestedValue(MAX_JSON_DEPTH)))).toBe(true)
    const deeper = Json.stringify(nestedValue(MAX_JSON_DEPTH + 1))
    expect(Either.isLeft(deeper) && deeper.left).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`)
  })

  it("checks 100,000 levels without overflowing the stack", () => {
    // The recursive check threw RangeError here, which HTTP turned into an empty 500.
    expect(() => decodeJson(nestedValue(100_000))).not.toThrow()
    expect(Either.isLeft(decodeJson(nestedValue(100_000)))).toBe(true)
  })

  it("ends on a value that contains itself", () => {
    const loop: Array<unknown> = []
    loop.push(loop)
    expect(Either.isLeft(decodeJson(loop))).toBe(true)
  })

  it("refuses a lone surrogate in any string or member name, naming where", () => {
    for (const s of ["s\ud800", "s\udfff", "\ude00\ud83d"]) {
      const value = JSON.parse(`{"a":[1,"${s}"]}`) as unknown
      expect(Json.problemOf(value)).toBe("a string contains a lone surrogate (text with no UTF-8 form) at $.a[1]")
    }
    expect(Json.problemOf({ x: { "k\ud800": 1 } })).toBe(
      "a member name contains a lone surrogate (text with no UTF-8 form) at $.x",
    )
    // Escaped in the text, a lone surrogate is the same refusal once parsed.
    expect(Json.problemOf(JSON.parse('{"x":{"k\\ud800":1}}'))).toContain("a member name contains a lone surrogate")
    expect(Json.problemOf("ok 😀 \ufffd")).toBeUndefined()
  })

  it("says which member is not JSON", () => {
    expect(Json.problemOf({ a: { b: [0, Number.NaN] } })).toBe("NaN is not a JSON number at $.a.b[1]")
    expect(Json.problemOf({ "a b": new Date(0) })).toBe('an object that is not plain (Date) at $["a b"]')
    const left = Json.stringify({ a: [undefined] })
    expect(Either.isLeft(left) && left.left).toContain("at $.a[0]")
  })
})

describe("Json.parse (strict)", () => {
  it("refuses duplicated member names and lone surrogates, as JSON.parse does not", () => {
    for (const text of ['{"approved":true,"approved":false}', '{"a":"s\\ud800"}', '["\\udfff"]']) {
      expect(JSON.parse(text)).toBeDefined()
      expect(Either.isLeft(Json.parse(text)), text).toBe(true)
    }
  })
})
