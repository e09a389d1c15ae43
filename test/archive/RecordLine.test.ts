/**
 * The export writes record lines directly instead of through the general canonicaliser (for
 * speed at a million records); the direct form must be byte for byte the canonical one, with and
 * without an attestation and for strings JSON must escape.
 */
import { describe, it } from "@effect/vitest"
import { Option } from "effect"
import * as Format from "../../src/archive/Format.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId, Seq } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { assert } from "../support/Assert.js"

const record = (attestation: Option.Option<Journal.Attestation>): Journal.Verbatim => ({
  run: generateRunId(),
  seq: Seq.make(4_321),
  prevHash: Digest.of("before"),
  hash: Digest.of("this"),
  raw: new Uint8Array(Buffer.from('{"kind":"Note","text":"é \\u2028 \\"q\\""}')),
  attestation,
})

describe("record lines", () => {
  it.each([
    ["without an attestation", Option.none()],
    ["with an attestation", Option.some(new Journal.Attestation({ keyId: "k-1", signature: "sig/+=" }))],
    [
      "with an attestation whose strings need escapes",
      Option.some(new Journal.Attestation({ keyId: 'k "quoted" \\ é', signature: "\u2028\n\t\u0001" })),
    ],
  ] as const)("%s are the canonical JSON of the record", (_, attestation) => {
    const r = record(attestation)
    assert.strictEqual(Format.recordLine(r), Format.recordLineCanonical(r))
  })

  it("a raw that is a view into a larger buffer is encoded from its own bytes only", () => {
    const backing = Buffer.from("xxxx{}yyyy")
    const r = { ...record(Option.none()), raw: new Uint8Array(backing.buffer, backing.byteOffset + 4, 2) }
    assert.strictEqual(Format.recordLine(r), Format.recordLineCanonical(r))
    assert.isTrue(Format.recordLine(r).includes(`"raw":"${Buffer.from("{}").toString("base64")}"`))
  })
})
