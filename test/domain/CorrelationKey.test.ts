import { describe, expect, it } from "@effect/vitest"
import { Array as Arr, Either, FastCheck, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { MAX_KEY_VALUE_BYTES, MAX_KEYS, MAX_NAME_BYTES } from "../../src/domain/Limits.js"

const k = CorrelationKey.make
const show = (keys: ReadonlyArray<CorrelationKey.CorrelationKey>) => keys.map((key) => key.toString())
const sorted = (keys: ReadonlyArray<CorrelationKey.CorrelationKey>) => show(Arr.sort(keys, CorrelationKey.order))

describe("CorrelationKey", () => {
  it("is shown namespace=value", () => {
    expect(k("document", "DOC-1").toString()).toBe("document=DOC-1")
    expect(String(k("a", ""))).toBe("a=")
  })

  it("equals compares namespace and value, not identity", () => {
    expect(CorrelationKey.equals(k("doc", "1"), k("doc", "1"))).toBe(true)
    expect(CorrelationKey.equals(k("doc", "1"), k("doc", "2"))).toBe(false)
    expect(CorrelationKey.equals(k("doc", "1"), k("dok", "1"))).toBe(false)
    // The shown form is ambiguous ("a=b"="c" vs "a"="b=c"); equality is not.
    expect(CorrelationKey.equals(k("a=b", "c"), k("a", "b=c"))).toBe(false)
  })
})

describe("CorrelationKey.order", () => {
  it("orders by namespace first, then value", () => {
    expect(sorted([k("b", "a"), k("a", "z"), k("a", "b")])).toEqual(["a=b", "a=z", "b=a"])
  })

  it("a smaller value never beats a larger namespace", () => {
    expect(CorrelationKey.order(k("a", "zzz"), k("b", "aaa"))).toBe(-1)
    expect(CorrelationKey.order(k("b", "aaa"), k("a", "zzz"))).toBe(1)
  })

  it("is 0 for equal keys", () => {
    expect(CorrelationKey.order(k("doc", "1"), k("doc", "1"))).toBe(0)
  })

  it('compares by code point: "Z" < "a" < "é"', () => {
    expect(sorted([k("n", "é"), k("n", "a"), k("n", "Z")])).toEqual(["n=Z", "n=a", "n=é"])
    expect(sorted([k("é", "v"), k("a", "v"), k("Z", "v")])).toEqual(["Z=v", "a=v", "é=v"])
  })

  it('puts an astral character ("😀", U+1F600) after "\\uffff", unlike UTF-16 comparison', () => {
    expect("😀" < "\uffff").toBe(true) // what plain JS string comparison says
    expect(CorrelationKey.order(k("n", "😀"), k("n", "\uffff"))).toBe(1)
    expect(CorrelationKey.order(k("n", "\uffff"), k("n", "😀"))).toBe(-1)
    expect(CorrelationKey.order(k("😀", "a"), k("\uffff", "z"))).toBe(1)
    expect(sorted([k("n", "😀"), k("n", "\uffff"), k("n", "\ue000")])).toEqual(["n=\ue000", "n=\uffff", "n=😀"])
  })

  it("puts a prefix before its extensions", () => {
    expect(sorted([k("n", "ab"), k("n", "a"), k("n", "")])).toEqual(["n=", "n=a", "n=ab"])
    expect(sorted([k("ab", ""), k("a", "z")])).toEqual(["a=z", "ab="])
  })

  it("agrees with comparing code-point sequences (property)", () => {
    const cmp = (a: string, b: string): number => {
      const x = Array.from(a, (c) => c.codePointAt(0) ?? 0)
      const y = Array.from(b, (c) => c.codePointAt(0) ?? 0)
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const d = (x[i] ?? 0) - (y[i] ?? 0)
        if (d !== 0) return Math.sign(d)
      }
      return Math.sign(x.length - y.length)
    }
    const str = FastCheck.string({ unit: "grapheme", maxLength: 4 })
    FastCheck.assert(
      FastCheck.property(str, str, str, str, (n1, v1, n2, v2) => {
        const expected = cmp(n1, n2) || cmp(v1, v2)
        expect(CorrelationKey.order(k(n1, v1), k(n2, v2))).toBe(expected)
      }),
    )
  })
})

describe("CorrelationKey.dedupe", () => {
  it("keeps first occurrences in their original order", () => {
    const keys = [k("doc", "2"), k("doc", "1"), k("doc", "2"), k("po", "1"), k("doc", "1"), k("po", "1")]
    expect(show(CorrelationKey.dedupe(keys))).toEqual(["doc=2", "doc=1", "po=1"])
  })

  it("keeps the first instance, not a later equal one", () => {
    const first = k("doc", "1")
    const later = k("doc", "1")
    const out = CorrelationKey.dedupe([first, later])
    expect(out).toHaveLength(1)
    expect(out[0]).toBe(first)
  })

  it("does not sort", () => {
    expect(show(CorrelationKey.dedupe([k("z", "1"), k("a", "1")]))).toEqual(["z=1", "a=1"])
  })

  it("treats keys with the same shown form but different parts as different", () => {
    expect(CorrelationKey.dedupe([k("a=b", "c"), k("a", "b=c")])).toHaveLength(2)
  })

  it("handles empty input", () => {
    expect(CorrelationKey.dedupe([])).toEqual([])
  })
})

describe("CorrelationKey.dedupe at scale", () => {
  it("takes linear time: 100,000 keys, half repeats, well under a second", () => {
    // The pairwise scan took 1.4 s for 30,000 keys; for 100,000 it would take about 15 s.
    const keys = Array.from({ length: 100_000 }, (_, i) => k(`n${(i % 50_000) % 7}`, String(i % 50_000)))
    const started = performance.now()
    const out = CorrelationKey.dedupe(keys)
    expect(performance.now() - started).toBeLessThan(1_000)
    expect(out).toHaveLength(50_000)
    expect(out[0]).toBe(keys[0])
  })

  it("agrees with the pairwise definition on random keys, including ones whose parts run together", () => {
    const part = FastCheck.constantFrom("", "a", "ab", "b", ":", "1:", "1:a")
    FastCheck.assert(
      FastCheck.property(FastCheck.array(FastCheck.tuple(part, part), { maxLength: 12 }), (pairs) => {
        const keys = pairs.map(([n, v]) => k(n, v))
        const expected = keys.filter((key, i) => keys.findIndex((other) => CorrelationKey.equals(other, key)) === i)
        expect(CorrelationKey.dedupe(keys)).toEqual(expected)
      }),
    )
  })
})

describe("CorrelationKey limits", () => {
  it(`accepts a namespace of ${MAX_NAME_BYTES} bytes and a value of ${MAX_KEY_VALUE_BYTES}, counted in UTF-8`, () => {
    expect(k("n".repeat(MAX_NAME_BYTES), "v".repeat(MAX_KEY_VALUE_BYTES)).value).toHaveLength(MAX_KEY_VALUE_BYTES)
    // "é" is two bytes: half as many fit.
    expect(() => k("é".repeat(MAX_NAME_BYTES / 2), "é".repeat(MAX_KEY_VALUE_BYTES / 2))).not.toThrow()
  })

  it("refuses one byte more, saying the limit and the size seen", () => {
    expect(() => k("n".repeat(MAX_NAME_BYTES + 1), "v")).toThrow(
      `is ${MAX_NAME_BYTES + 1} bytes of UTF-8, over the limit of ${MAX_NAME_BYTES}`,
    )
    expect(() => k("n", `${"é".repeat(MAX_KEY_VALUE_BYTES / 2)}x`)).toThrow(
      `is ${MAX_KEY_VALUE_BYTES + 1} bytes of UTF-8, over the limit of ${MAX_KEY_VALUE_BYTES}`,
    )
  })

  it("refuses a lone surrogate in the namespace or the value", () => {
    for (const [n, v] of [
      ["n", "s\ud800"],
      ["n", "s\udfff"],
      ["\udc00", "v"],
    ] as const) {
      expect(() => k(n, v)).toThrow("lone surrogate")
    }
    expect(k("n", "s\ud83d\ude00").value).toBe("s😀")
  })

  it(`Keys allows ${MAX_KEYS} keys and refuses more, saying how many`, () => {
    const decode = Schema.decodeUnknownEither(CorrelationKey.Keys)
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ namespace: "n", value: String(i) }))
    expect(Either.isRight(decode(many(MAX_KEYS)))).toBe(true)
    const over = decode(many(MAX_KEYS + 1))
    expect(Either.isLeft(over) && over.left.message).toContain(
      `${MAX_KEYS + 1} correlation keys, over the limit of ${MAX_KEYS}`,
    )
    expect(CorrelationKey.checkCount(many(MAX_KEYS + 1).map((x) => k(x.namespace, x.value)))).toBe(
      `${MAX_KEYS + 1} correlation keys, over the limit of ${MAX_KEYS}`,
    )
    expect(CorrelationKey.checkCount([])).toBeUndefined()
  })
})
