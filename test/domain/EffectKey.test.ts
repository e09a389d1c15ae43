import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Schema } from "effect"
import * as EffectKey from "../../src/domain/EffectKey.js"
import { StepId } from "../../src/domain/Ids.js"

const sha256Hex = (hex: string): string => createHash("sha256").update(Buffer.from(hex, "hex")).digest("hex")
const utf8Hex = (s: string): string => Buffer.from(s, "utf8").toString("hex")

const base: EffectKey.KeyParts = {
  step: StepId.make(3),
  phase: "forward",
  ordinal: 2,
  attempt: 1,
  kind: "pay.invoice",
  args: { to: "acme", amount: 10 },
}

describe("EffectKey.derive", () => {
  it("matches the §3.1 layout, written out byte by byte (compensating, ASCII kind)", () => {
    const kind = "pay.invoice"
    const preimage =
      "00000003" + // step 3, u32 BE
      "01" + // compensating
      "00000002" + // ordinal 2, u32 BE
      "00000001" + // attempt 1, u32 BE
      "000000000000000b" + // kind byte length 11, u64 BE
      utf8Hex(kind) +
      utf8Hex('{"amount":10,"to":"acme"}') // canonical args: sorted keys, no spaces
    const key = EffectKey.derive({ ...base, phase: "compensating", kind, args: { to: "acme", amount: 10 } })
    expect(key).toBe(sha256Hex(preimage))
  })

  it("matches the §3.1 layout with a forward phase, large fields and a multi-byte kind", () => {
    const kind = "zahlung.prüfen/€" // 16 characters, 19 UTF-8 bytes
    expect(Buffer.byteLength(kind, "utf8")).toBe(19)
    const preimage =
      "fffffffe" + // step 2³²−2
      "00" + // forward
      "01020304" + // ordinal 0x01020304
      "00000000" + // attempt 0
      "0000000000000013" + // kind byte length 19, u64 BE
      utf8Hex(kind) +
      utf8Hex('[1,"é",null,{"a":true,"b":1e+21}]')
    const key = EffectKey.derive({
      step: StepId.make(0xfffffffe),
      phase: "forward",
      ordinal: 0x01020304,
      attempt: 0,
      kind,
      args: [1, "é", null, { b: 1e21, a: true }],
    })
    expect(key).toBe(sha256Hex(preimage))
  })

  it("with an empty kind and null args is the hash of the fixed fields, a zero length and 'null'", () => {
    const preimage = `00000000${"00"}${"00000000"}${"00000000"}${"0000000000000000"}${utf8Hex("null")}`
    expect(
      EffectKey.derive({ step: StepId.make(0), phase: "forward", ordinal: 0, attempt: 0, kind: "", args: null }),
    ).toBe(sha256Hex(preimage))
  })

  it("is 64 lowercase hex and deterministic", () => {
    const a = EffectKey.derive(base)
    expect(a).toMatch(/^[0-9a-f]{64}$/)
    expect(EffectKey.derive({ ...base })).toBe(a)
  })

  it("does not depend on the key order of the arguments", () => {
    expect(EffectKey.derive({ ...base, args: { amount: 10, to: "acme" } })).toBe(
      EffectKey.derive({ ...base, args: { to: "acme", amount: 10 } }),
    )
  })

  it("changes when any single part changes", () => {
    const original = EffectKey.derive(base)
    const variants: ReadonlyArray<readonly [string, EffectKey.KeyParts]> = [
      ["step", { ...base, step: StepId.make(4) }],
      ["phase", { ...base, phase: "compensating" }],
      ["ordinal", { ...base, ordinal: 3 }],
      ["attempt", { ...base, attempt: 2 }],
      ["kind", { ...base, kind: "pay.invoices" }],
      ["args value", { ...base, args: { to: "acme", amount: 11 } }],
      ["args key", { ...base, args: { to: "acme", amount: 10, memo: null } }],
    ]
    const keys = new Set([original])
    for (const [label, parts] of variants) {
      const key = EffectKey.derive(parts)
      expect(key, label).not.toBe(original)
      keys.add(key)
    }
    expect(keys.size).toBe(variants.length + 1)
  })

  it("keeps fixed-width fields apart: (step 1, ordinal 2) differs from (step 2, ordinal 1)", () => {
    expect(EffectKey.derive({ ...base, step: StepId.make(1), ordinal: 2 })).not.toBe(
      EffectKey.derive({ ...base, step: StepId.make(2), ordinal: 1 }),
    )
  })

  it("keeps kind and arguments apart where naive concatenation would collide", () => {
    // kind "x1" + args `23` and kind "x" + args `123` both concatenate to "x123".
    const a = { ...base, kind: "x1", args: 23 }
    const b = { ...base, kind: "x", args: 123 }
    expect(`${a.kind}${JSON.stringify(a.args)}`).toBe(`${b.kind}${JSON.stringify(b.args)}`)
    expect(EffectKey.derive(a)).not.toBe(EffectKey.derive(b))
    // kind "s1" + args `0.5` and kind "s" + args `10.5` both concatenate to "s10.5".
    const c = { ...base, kind: "s1", args: 0.5 }
    const d = { ...base, kind: "s", args: 10.5 }
    expect(`${c.kind}${JSON.stringify(c.args)}`).toBe(`${d.kind}${JSON.stringify(d.args)}`)
    expect(EffectKey.derive(c)).not.toBe(EffectKey.derive(d))
  })

  it("distinct parts give distinct keys (property)", () => {
    const parts = FastCheck.record({
      step: FastCheck.integer({ min: 0, max: 0xffffffff }),
      phase: FastCheck.constantFrom("forward" as const, "compensating" as const),
      ordinal: FastCheck.integer({ min: 0, max: 0xffffffff }),
      attempt: FastCheck.integer({ min: 0, max: 0xffffffff }),
      kind: FastCheck.string(),
      args: FastCheck.integer(),
    })
    FastCheck.assert(
      FastCheck.property(parts, parts, (p, q) => {
        const same =
          p.step === q.step &&
          p.phase === q.phase &&
          p.ordinal === q.ordinal &&
          p.attempt === q.attempt &&
          p.kind === q.kind &&
          p.args === q.args
        const kp = EffectKey.derive({ ...p, step: StepId.make(p.step) })
        const kq = EffectKey.derive({ ...q, step: StepId.make(q.step) })
        expect(kp === kq).toBe(same)
      }),
    )
  })

  it("accepts the largest u32 for step, ordinal and attempt", () => {
    const max = 0xffffffff
    expect(EffectKey.derive({ ...base, step: StepId.make(max), ordinal: max, attempt: max })).toMatch(/^[0-9a-f]{64}$/)
  })

  it("throws RangeError for an out-of-range step", () => {
    expect(() => EffectKey.derive({ ...base, step: -1 as StepId })).toThrow(RangeError)
    expect(() => EffectKey.derive({ ...base, step: (2 ** 32) as StepId })).toThrow(RangeError)
    expect(() => EffectKey.derive({ ...base, step: 1.5 as StepId })).toThrow(RangeError)
  })

  it("throws RangeError for an out-of-range ordinal or attempt", () => {
    expect(() => EffectKey.derive({ ...base, ordinal: -1 })).toThrow(RangeError)
    expect(() => EffectKey.derive({ ...base, ordinal: 2 ** 32 })).toThrow(RangeError)
    expect(() => EffectKey.derive({ ...base, attempt: -1 })).toThrow(RangeError)
    expect(() => EffectKey.derive({ ...base, attempt: 2 ** 32 })).toThrow(RangeError)
  })
})

describe("EffectKey.show and schema", () => {
  it("shows ek:<hex>", () => {
    const key = EffectKey.derive(base)
    expect(EffectKey.show(key)).toBe(`ek:${key}`)
    expect(EffectKey.show(key)).toMatch(/^ek:[0-9a-f]{64}$/)
  })

  it("the schema takes 64 lowercase hex only", () => {
    const decode = Schema.decodeUnknownEither(EffectKey.EffectKey)
    expect(Either.isRight(decode("a".repeat(64)))).toBe(true)
    expect(Either.isLeft(decode("A".repeat(64)))).toBe(true)
    expect(Either.isLeft(decode(`ek:${"a".repeat(64)}`))).toBe(true)
    expect(Either.isLeft(decode("a".repeat(63)))).toBe(true)
  })
})
