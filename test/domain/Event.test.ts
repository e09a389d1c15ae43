import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { InboundEvent } from "../../src/domain/Event.js"
import type { Json } from "../../src/domain/Json.js"
import { MAX_JSON_DEPTH, MAX_KEYS, MAX_NAME_BYTES } from "../../src/domain/Limits.js"

const fields = {
  source: "agentplane://caller/a",
  id: "e-1",
  kind: "payment.captured",
  correlation: [CorrelationKey.make("invoice", "INV-1")],
  payload: { amount: 40 } as Json,
}

const decode = Schema.decodeUnknownEither(InboundEvent)

describe("InboundEvent limits (the same for every backend and the memory layer)", () => {
  for (const field of ["source", "id", "kind"] as const) {
    it(`refuses a ${field} over ${MAX_NAME_BYTES} bytes, saying the size and the limit`, () => {
      expect(() => new InboundEvent({ ...fields, [field]: "x".repeat(MAX_NAME_BYTES) })).not.toThrow()
      expect(() => new InboundEvent({ ...fields, [field]: "€".repeat(171) })).toThrow(
        `is 513 bytes of UTF-8, over the limit of ${MAX_NAME_BYTES}`,
      )
    })

    it(`refuses a lone surrogate in the ${field}`, () => {
      for (const bad of ["s\ud800", "s\udfff"]) {
        expect(() => new InboundEvent({ ...fields, [field]: bad })).toThrow("lone surrogate")
      }
      expect(new InboundEvent({ ...fields, [field]: "s\ufffd" })[field]).toBe("s\ufffd")
    })
  }

  it("refuses a lone surrogate anywhere in the payload, naming where", () => {
    expect(() => new InboundEvent({ ...fields, payload: { lines: [{ note: "s\ud800" }] } })).toThrow(
      "a string contains a lone surrogate (text with no UTF-8 form) at $.lines[0].note",
    )
    expect(() => new InboundEvent({ ...fields, payload: { "k\udfff": 1 } })).toThrow(
      "a member name contains a lone surrogate",
    )
  })

  it(`refuses a payload nested deeper than ${MAX_JSON_DEPTH} levels, without overflowing the stack`, () => {
    let payload: Json = 1
    for (let i = 0; i < 10_000; i++) payload = [payload]
    expect(() => new InboundEvent({ ...fields, payload })).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`)
  })

  it(`refuses more than ${MAX_KEYS} correlation keys, counted before repeats`, () => {
    const keys = (n: number) => Array.from({ length: n }, () => CorrelationKey.make("invoice", "INV-1"))
    expect(() => new InboundEvent({ ...fields, correlation: keys(MAX_KEYS) })).not.toThrow()
    expect(() => new InboundEvent({ ...fields, correlation: keys(MAX_KEYS + 1) })).toThrow(
      `${MAX_KEYS + 1} correlation keys, over the limit of ${MAX_KEYS}`,
    )
  })

  it("decoding an encoded event applies the same limits", () => {
    const encoded = { ...fields, correlation: [{ namespace: "n", value: "v".repeat(2_000) }] }
    const result = decode(encoded)
    expect(Either.isLeft(result) && result.left.message).toContain("over the limit of 1024")
  })
})
