import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck } from "effect"
import { Digest } from "../../src/domain/Digest.js"
import { RunId } from "../../src/domain/Ids.js"
import { RunOutcome } from "../../src/domain/Journal.js"
import * as LogLeaf from "../../src/domain/LogLeaf.js"

const RUN = RunId.make("run_01JBZ8X4Q7V2K9M3N5P6R8S0TA")
const leaf = new LogLeaf.LogLeaf({
  run: RUN,
  chainHead: Digest.make("ab".repeat(32)),
  records: 7,
  outcome: "succeeded",
})
const TEXT = `agentplane-log-leaf/1\n{"chain_head":"${"ab".repeat(32)}","outcome":"succeeded","records":7,"run":"${RUN}"}`

const tagOf = (result: Either.Either<unknown, { readonly _tag: string }>): string | undefined =>
  Either.isLeft(result) ? result.left._tag : undefined

describe("LogLeaf.encode", () => {
  it("is the tag, then the JCS text of the fields with keys sorted", () => {
    expect(Buffer.from(LogLeaf.encode(leaf)).toString("utf8")).toBe(TEXT)
  })

  it("hashes as SHA-256(0x00 ‖ encoding)", () => {
    const expected = createHash("sha256")
      .update(Buffer.from([0]))
      .update(TEXT, "utf8")
      .digest("hex")
    expect(LogLeaf.hash(leaf)).toBe(expected)
  })

  it("differs when any field differs", () => {
    const variants = [
      new LogLeaf.LogLeaf({ ...leaf, records: 8 }),
      new LogLeaf.LogLeaf({ ...leaf, outcome: "cancelled" }),
      new LogLeaf.LogLeaf({ ...leaf, chainHead: Digest.make("ac".repeat(32)) }),
      new LogLeaf.LogLeaf({ ...leaf, run: RunId.make("run_01JBZ8X4Q7V2K9M3N5P6R8S0TB") }),
    ]
    expect(new Set([leaf, ...variants].map(LogLeaf.hash)).size).toBe(5)
  })
})

describe("LogLeaf.decode", () => {
  const arbitrary = FastCheck.record({
    ulid: FastCheck.stringMatching(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/),
    head: FastCheck.uint8Array({ minLength: 32, maxLength: 32 }),
    records: FastCheck.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    outcome: FastCheck.constantFrom(...RunOutcome.literals),
  })

  it("reads back every leaf it encodes", () => {
    FastCheck.assert(
      FastCheck.property(arbitrary, ({ ulid, head, records, outcome }) => {
        const l = new LogLeaf.LogLeaf({
          run: RunId.make(`run_${ulid}`),
          chainHead: Digest.make(Buffer.from(head).toString("hex")),
          records,
          outcome,
        })
        expect(LogLeaf.decode(LogLeaf.encode(l))).toEqual(Either.right(l))
      }),
    )
  })

  it.each([
    ["no tag", TEXT.slice("agentplane-log-leaf/1\n".length)],
    ["another version", TEXT.replace("/1\n", "/2\n")],
    [
      "keys out of order",
      TEXT.replace(/\{.*\}/, `{"run":"${RUN}","chain_head":"${"ab".repeat(32)}","outcome":"succeeded","records":7}`),
    ],
    ["whitespace", TEXT.replace('"records":7', '"records": 7')],
    ["a number written another way", TEXT.replace('"records":7', '"records":7.0')],
    ["an extra field", TEXT.replace('"records":7', '"extra":1,"records":7')],
    ["a negative record count", TEXT.replace('"records":7', '"records":-1')],
    ["an unknown outcome", TEXT.replace("succeeded", "vanished")],
    ["an uppercase chain head", TEXT.replace("ab".repeat(32), "AB".repeat(32))],
    ["not JSON", "agentplane-log-leaf/1\n{"],
    ["a trailing newline", `${TEXT}\n`],
  ])("refuses %s", (_, text) => {
    expect(tagOf(LogLeaf.decode(Buffer.from(text, "utf8")))).toBe("LeafMalformed")
  })
})
