import { Option } from "effect"
import { describe, expect, it } from "vitest"
import * as JsonDiff from "../../src/domain/JsonDiff.js"

describe("JsonDiff", () => {
  it("equal values have no difference, whatever the key order", () => {
    expect(JsonDiff.first({ a: [1, { b: null }], c: "x" }, { c: "x", a: [1, { b: null }] })).toEqual(Option.none())
  })

  it("names the first differing path in document order, with both values", () => {
    const d = Option.getOrThrow(
      JsonDiff.first(
        { model: "m", prompt: [{ content: "old" }, { content: "same" }] },
        { model: "m", prompt: [{ content: "new" }, { content: "other" }] },
      ),
    )
    expect(d).toEqual({ path: "$.prompt[0].content", expected: "old", offered: "new" })
    expect(JsonDiff.render(d)).toBe('at $.prompt[0].content: journaled "old", offered "new"')
  })

  it("an absent key, a changed type and an odd key name are differences too", () => {
    expect(Option.getOrThrow(JsonDiff.first({ a: 1 }, {})).offered).toBeUndefined()
    expect(Option.getOrThrow(JsonDiff.first([1], { 0: 1 })).path).toBe("$")
    expect(Option.getOrThrow(JsonDiff.first({ "a b": 1 }, { "a b": 2 })).path).toBe('$["a b"]')
    expect(JsonDiff.render(Option.getOrThrow(JsonDiff.first("x".repeat(300), "y")), 10)).toContain("…")
  })
})
