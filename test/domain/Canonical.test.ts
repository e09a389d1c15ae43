import { describe, expect, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as Canonical from "../../src/domain/Canonical.js"
import type { Json } from "../../src/domain/Json.js"

const text = (value: Json): string => Canonical.text(value)

describe("Canonical.text (RFC 8785 / JCS)", () => {
  it("is canon version 1", () => {
    expect(Canonical.CANON_VERSION).toBe(1)
  })

  it("does not depend on key order", () => {
    expect(text({ b: 1, a: 2 })).toBe('{"a":2,"b":1}')
    expect(text({ a: 2, b: 1 })).toBe('{"a":2,"b":1}')
  })

  it("sorts keys of nested objects too, and keeps array order", () => {
    expect(text({ z: [3, 1, 2], a: { y: null, x: true } })).toBe('{"a":{"x":true,"y":null},"z":[3,1,2]}')
  })

  it("has no insignificant whitespace", () => {
    expect(text(JSON.parse('{ "a" : [ 1 , 2 ] ,\n "b" : { } }') as Json)).toBe('{"a":[1,2],"b":{}}')
  })

  it("sorts keys by UTF-16 code units (RFC 8785 §3.2.3 example)", () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    ) as Json
    expect(text(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis",' +
        '"€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    )
  })

  it("reproduces the RFC 8785 §3.2.2 example", () => {
    const input = JSON.parse(`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/",
      "literals": [null, true, false]
    }`) as Json
    expect(text(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    )
  })

  describe("numbers", () => {
    const cases: ReadonlyArray<readonly [number, string]> = [
      [1.0, "1"],
      [-0, "0"],
      [0, "0"],
      [1e21, "1e+21"],
      [1e20, "100000000000000000000"],
      [1e-7, "1e-7"],
      [0.000001, "0.000001"],
      [4.5, "4.5"],
      [-1.5, "-1.5"],
      [5e-324, "5e-324"],
      [-5e-324, "-5e-324"],
      [1.7976931348623157e308, "1.7976931348623157e+308"],
      [9007199254740992, "9007199254740992"],
      [0.1 + 0.2, "0.30000000000000004"],
    ]
    for (const [value, expected] of cases) {
      it(`${Object.is(value, -0) ? "-0" : String(value)} → ${expected}`, () => {
        expect(text(value)).toBe(expected)
        expect(text([value])).toBe(`[${expected}]`)
      })
    }
  })

  describe("strings", () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["a BEL control character", "\u0007", '"\\u0007"'],
      ["a control character in lowercase hex", "\u001f", '"\\u001f"'],
      ["NUL", "\u0000", '"\\u0000"'],
      ["newline, tab, CR, backspace, form feed (short escapes)", "\n\t\r\b\f", '"\\n\\t\\r\\b\\f"'],
      ["quote and backslash", '"\\', '"\\"\\\\"'],
      ["slash, unescaped", "a/b", '"a/b"'],
      ["é, literal", "é", '"é"'],
      ["€ and 😀, literal", "€😀", '"€😀"'],
      ["DEL, literal", "\u007f", '"\u007f"'],
      ["U+2028, literal", "\u2028", '"\u2028"'],
    ]
    for (const [label, value, expected] of cases) {
      it(label, () => {
        expect(text(value)).toBe(expected)
      })
    }

    it("escapes inside keys the same way", () => {
      expect(text({ "\u0007é": 1 })).toBe('{"\\u0007é":1}')
    })
  })

  it("literals", () => {
    expect(text(null)).toBe("null")
    expect(text(true)).toBe("true")
    expect(text(false)).toBe("false")
    expect(text([])).toBe("[]")
    expect(text({})).toBe("{}")
  })

  it("gives the same text for a value and any reordering of its keys", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.dictionary(FastCheck.string(), FastCheck.integer()), (dict) => {
        const reversed = Object.fromEntries(Object.entries(dict).reverse())
        expect(text(reversed)).toBe(text(dict))
      }),
    )
  })

  it("is JSON text that parses back to an equal value", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.jsonValue(), (value) => {
        // JSON has no negative zero: -0 is written 0 (RFC 8785 §3.2.2.3), so compare with what
        // plain JSON makes of the value, which turns -0 into 0 the same way.
        expect(JSON.parse(text(value as Json))).toEqual(JSON.parse(JSON.stringify(value)))
      }),
    )
  })
})

describe("Canonical.bytes", () => {
  it("is the UTF-8 encoding of the text", () => {
    const value: Json = { é: "😀", a: [1, "x"] }
    expect(Buffer.from(Canonical.bytes(value)).toString("utf8")).toBe('{"a":[1,"x"],"é":"😀"}')
    expect(Array.from(Canonical.bytes("é"))).toEqual([0x22, 0xc3, 0xa9, 0x22])
  })
})
