import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as JsonText from "../../src/domain/JsonText.js"
import { MAX_JSON_DEPTH } from "../../src/domain/Limits.js"
import * as Text from "../../src/domain/Text.js"

const runs = Number(process.env.AGENTPLANE_PROP_RUNS ?? 200)

const refusal = (text: string, options?: JsonText.Options): string => {
  const result = JsonText.parse(text, options)
  if (Either.isRight(result)) throw new Error(`expected a refusal of ${JSON.stringify(text)}`)
  return result.left
}

const nested = (depth: number, inner = "1"): string => "[".repeat(depth) + inner + "]".repeat(depth)

describe("JsonText.parse", () => {
  it("parses what JSON.parse parses, to the same value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value)
        fc.pre(Text.isWellFormed(text))
        expect(JsonText.parse(text)).toEqual(Either.right(JSON.parse(text)))
      }),
      { numRuns: runs },
    )
  })

  it("reads whitespace, escapes, exponents and astral characters", () => {
    expect(JsonText.parse(' \t\r\n{"a" : [ 1 , {"b":null} ] , "c":"x"} ')).toEqual(
      Either.right({ a: [1, { b: null }], c: "x" }),
    )
    expect(JsonText.parse('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9"')).toEqual(Either.right('"\\/\b\f\n\r\té'))
    expect(JsonText.parse("-1.5e3")).toEqual(Either.right(-1500))
    expect(JsonText.parse('"\\ud83d\\ude00 😀"')).toEqual(Either.right("😀 😀"))
    expect(JsonText.parse("[]")).toEqual(Either.right([]))
    expect(JsonText.parse("{}")).toEqual(Either.right({}))
  })

  for (const text of [
    "",
    "{",
    "[",
    "{'a':1}",
    "[1,]",
    '{"a":1,}',
    "undefined",
    "NaN",
    "{a:1}",
    "01",
    "1.",
    "-",
    "tru",
    "[1 2]",
    '"a',
    '"\u0001"',
    '"\\x"',
    '"\\u12"',
    "1 2",
    "\ufeff1",
  ]) {
    it(`refuses text that is not JSON: ${JSON.stringify(text)}`, () => {
      expect(refusal(text)).toMatch(/ at \$.* \(offset \d+\)$/)
    })
  }

  it("refuses a duplicated member name at any depth, naming its path", () => {
    expect(refusal('{"approved":true,"approved":false}')).toBe("duplicate member name at $.approved (offset 27)")
    expect(refusal('{"a":[1,{"b":{"c":1,"c":2}}]}')).toContain("duplicate member name at $.a[1].b.c")
    expect(refusal('{"a b":1,"a b":2}')).toContain('at $["a b"]')
    // Equal after escapes is equal.
    expect(refusal('{"a":1,"\\u0061":2}')).toContain("duplicate member name at $.a")
  })

  it("keeps names equal in different objects", () => {
    expect(JsonText.parse('{"a":{"a":1},"b":{"a":2}}')).toEqual(Either.right({ a: { a: 1 }, b: { a: 2 } }))
  })

  it("refuses a duplicated member wherever a random object puts it", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1 }),
        fc.nat(),
        fc.jsonValue(),
        (object, pick, extra) => {
          const keys = Object.keys(object)
          const key = keys[pick % keys.length] as string
          const text = `${JSON.stringify(object).slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(extra)}}`
          fc.pre(Text.isWellFormed(text))
          expect(refusal(`[${text}]`)).toContain("duplicate member name at $[0]")
        },
      ),
      { numRuns: runs },
    )
  })

  it("refuses a lone surrogate, escaped or raw, in a string or a member name", () => {
    for (const s of ['"s\\ud800"', '"s\\udfff"', '"\\ude00\\ud83d"', `"s${"\ud800"}"`]) {
      expect(refusal(s)).toContain("lone surrogate")
    }
    expect(refusal('{"x":["ok","s\\udfff"]}')).toContain("lone surrogate (text with no UTF-8 form) at $.x[1]")
    expect(refusal('{"k\\ud800":1}')).toContain("a member name contains a lone surrogate")
  })

  it(`bounds nesting at ${MAX_JSON_DEPTH} levels by default, and at maxDepth when given`, () => {
    expect(Either.isRight(JsonText.parse(nested(MAX_JSON_DEPTH)))).toBe(true)
    expect(refusal(nested(MAX_JSON_DEPTH + 1))).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`)
    expect(refusal('{"a":{"b":[1]}}', { maxDepth: 2 })).toBe("nested deeper than 2 levels at $.a.b (offset 10)")
    expect(JsonText.parse("1", { maxDepth: 0 })).toEqual(Either.right(1))
  })

  it("scans a million levels without overflowing the stack (no recursion)", () => {
    expect(refusal(nested(1_000_000))).toContain("nested deeper than")
    const deep = JsonText.parse(nested(100_000, "{}"), { maxDepth: 200_000 })
    expect(Either.isRight(deep)).toBe(true)
  })

  it("refuses a number with no finite double instead of returning Infinity", () => {
    expect(refusal("[1e400]")).toBe("number out of range (it has no finite double) at $[0] (offset 1)")
  })

  it("refuses an integer past 2^53 that would come back rounded, naming its path", () => {
    expect(refusal('{"amount":{"cents":9007199254740993}}')).toBe(
      "integer beyond ±2^53 that a JSON number cannot carry exactly (send it as a string) at $.amount.cents (offset 19)",
    )
    expect(refusal("[-9007199254740995]")).toContain("integer beyond ±2^53")
    // Read back as written: 2^53 itself, powers of ten, exponent forms, and a large double as JSON.stringify writes it.
    for (const text of [
      "9007199254740992",
      "100000000000000000000",
      "1e20",
      "-9007199254740991",
      "-48775537181279690",
    ]) {
      const result = JsonText.parse(text)
      expect(Either.isRight(result) && result.right === Number(text)).toBe(true)
    }
  })

  it('keeps a member named "__proto__" as a member, not the prototype', () => {
    const result = JsonText.parse('{"__proto__":{"x":1},"a":2}')
    if (Either.isLeft(result)) throw new Error(result.left)
    const value = result.right as Record<string, unknown>
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
    expect(Object.keys(value)).toEqual(["__proto__", "a"])
    expect(Object.getOwnPropertyDescriptor(value, "__proto__")?.value).toEqual({ x: 1 })
  })
})
