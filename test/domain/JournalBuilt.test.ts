import { describe, expect, it } from "@effect/vitest"
import { Either, Option } from "effect"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { generateRunId, Seq, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"

// A built append skips the schema: its body must be the one the schema's encoding gives, and the
// payload it hands the store must be the one `read` decodes, or a chain would verify against a
// body nobody reads back.

const run = generateRunId()
const seq = Seq.make(3)
const key = EffectKey.make("a".repeat(64))

const fields = (kind: Journal.Kind, effectKey: Option.Option<EffectKey> = Option.some(key)) => ({
  case: Option.none(),
  step: StepId.make(1),
  phase: "forward" as const,
  effectKey,
  kind,
})

const viaSchema = (kind: Journal.Kind) => Journal.bodyText({ ...fields(kind), run, seq })

const decoded = (text: string) => Either.getOrThrow(Journal.parseKindText(text))

const plain: ReadonlyArray<Journal.Kind> = [
  {
    kind: "EffectStarted",
    descriptor: { kind: "refund", ordinal: 0, args: { amount: 12, to: "ünïcode", nested: [1, null, true] } },
    recovery: "retry",
    mutates: true,
    attempt: 1,
    backoff_ms: 0,
    outbound_label: "trusted",
  },
  { kind: "EffectDone", output: { ok: [1, 2] }, source: "live", spend: { tokens: 0, minor_units: 0 }, declared: null },
  { kind: "StepStarted", skill: "refund" },
  { kind: "StepFinished", outcome: "succeeded" },
  { kind: "PolicyDenied", action: "refund", resource: "run", reason: "amount came from an event" },
  { kind: "Note", text: "{}" },
]

describe("Journal.built", () => {
  it.each(plain.map((kind) => [kind.kind, kind] as const))(
    "a plain %s: the body the schema would encode, and the payload read decodes",
    (_tag, kind) => {
      const encoded = Journal.encoded(Journal.built(fields(kind)), run, seq)
      expect(encoded.text).toBe(viaSchema(kind))
      expect(encoded.kind).toBe(kind)
      expect(encoded.kind).toStrictEqual(decoded(encoded.text))
    },
  )

  it("a field outside the kind's schema is dropped as the schema drops it, and the store decodes", () => {
    const kind = { kind: "StepStarted", skill: "refund", smuggled: 1 } as unknown as Journal.Kind
    const encoded = Journal.encoded(Journal.built(fields(kind)), run, seq)
    expect(encoded.text).toBe(viaSchema(kind))
    expect(encoded.text).not.toContain("smuggled")
    expect(encoded.kind).toBeUndefined()
  })

  it("an undefined field is left out of the body, and the store decodes what is left", () => {
    const kind = { kind: "Note", text: "x", extra: undefined } as unknown as Journal.Kind
    const encoded = Journal.encoded(Journal.built(fields(kind)), run, seq)
    expect(encoded.text).toBe(viaSchema(kind))
    expect(encoded.kind).toBeUndefined()
    expect(decoded(encoded.text)).toStrictEqual({ kind: "Note", text: "x" })
  })

  it("a required field left undefined is refused, as the schema refuses it", () => {
    const kind = { kind: "Note", text: undefined } as unknown as Journal.Kind
    expect(() => Journal.encoded(Journal.built(fields(kind)), run, seq)).toThrow(/text/)
  })

  const admitted = (governed: unknown): Journal.Kind =>
    ({
      kind: "RunAdmitted",
      capability: "refund",
      governed_by: governed,
      input: { n: 1 },
      input_label: "operator",
      policy_bundle: "b",
      canon: 1,
    }) as Journal.Kind

  const structs: ReadonlyArray<readonly [string, Journal.Kind]> = [
    ["an admission with governed_by", admitted({ name: "n", version: "1", digest: "d", publisher: "p" })],
    [
      "a suspension awaiting an event",
      {
        kind: "RunSuspended",
        reason: { reason: "awaiting_event", kind: "paid", correlation: [["o", "1"]], until: null },
      },
    ],
    [
      "a suspension awaiting a time",
      { kind: "RunSuspended", reason: { reason: "awaiting_time", until: 1_700_000_000 } },
    ],
  ] as ReadonlyArray<readonly [string, Journal.Kind]>

  it.each(structs)("%s, a struct inside: the body the schema would encode, and the payload read decodes", (_, kind) => {
    const encoded = Journal.encoded(Journal.built(fields(kind, Option.none())), run, seq)
    expect(encoded.text).toBe(Journal.bodyText({ ...fields(kind, Option.none()), run, seq }))
    expect(encoded.kind).toBe(kind)
    expect(encoded.kind).toStrictEqual(decoded(encoded.text))
  })

  it("a field outside a struct inside the payload goes through the schema, which drops it", () => {
    const kind = admitted({ name: "n", version: "1", digest: "d", publisher: "p", smuggled: true })
    const encoded = Journal.encoded(Journal.built(fields(kind, Option.none())), run, seq)
    expect(encoded.text).toBe(Journal.bodyText({ ...fields(kind, Option.none()), run, seq }))
    expect(encoded.text).not.toContain("smuggled")
    expect(encoded.kind).toBeUndefined()
  })

  it("a union member's field outside every member goes through the schema too", () => {
    const kind = {
      kind: "RunSuspended",
      reason: { reason: "awaiting_time", until: 1_700_000_000, extra: 1 },
    } as unknown as Journal.Kind
    const encoded = Journal.encoded(Journal.built(fields(kind, Option.none())), run, seq)
    expect(encoded.text).toBe(Journal.bodyText({ ...fields(kind, Option.none()), run, seq }))
    expect(encoded.text).not.toContain("extra")
    expect(encoded.kind).toBeUndefined()
  })

  it("an append not built by the runtime is encoded and decoded by the schema, at every position", () => {
    const kind = plain[0] as Journal.Kind
    const append = new Journal.Append(fields(kind))
    const encoded = Journal.encoded(append, run, seq)
    expect(encoded.text).toBe(viaSchema(kind))
    expect(encoded.kind).toBeUndefined()
    const moved = Journal.encoded(append, run, Seq.make(4))
    expect(moved.text).toBe(Journal.bodyText({ ...fields(kind), run, seq: Seq.make(4) }))
    expect(moved.kind).toBeUndefined()
  })

  it("a built append encoded at a second position is still taken as built, and memoised at each", () => {
    const kind = plain[2] as Journal.Kind
    const append = Journal.built(fields(kind))
    const first = Journal.encoded(append, run, seq)
    expect(Journal.encoded(append, run, seq)).toBe(first)
    const moved = Journal.encoded(append, run, Seq.make(4))
    expect(moved.kind).toBe(kind)
    expect(moved.text).toBe(Journal.bodyText({ ...fields(kind), run, seq: Seq.make(4) }))
    expect(Journal.encoded(append, run, Seq.make(4))).toBe(moved)
  })
})
