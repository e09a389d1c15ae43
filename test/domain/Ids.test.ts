import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Ids from "../../src/domain/Ids.js"
import type { InvalidId } from "../../src/errors/IdError.js"
import { assert } from "../support/Assert.js"

// Crockford base32, as the ULID specification writes it.
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
const ULID_SHAPE = "[0-7][0-9A-HJKMNP-TV-Z]{25}"

/** Milliseconds encoded in the first 10 characters of a ULID. */
const ulidTime = (ulid: string): number =>
  [...ulid.slice(0, 10)].reduce((acc, ch) => acc * 32 + CROCKFORD.indexOf(ch), 0)

const VALID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

interface Kind {
  readonly prefix: string
  readonly generate: () => string
  readonly parse: (input: string) => Either.Either<string, InvalidId>
  readonly decode: (input: unknown) => Either.Either<unknown, unknown>
}

const kinds: ReadonlyArray<Kind> = [
  { prefix: "run", generate: Ids.generateRunId, parse: Ids.parseRunId, decode: Schema.decodeUnknownEither(Ids.RunId) },
  {
    prefix: "case",
    generate: Ids.generateCaseId,
    parse: Ids.parseCaseId,
    decode: Schema.decodeUnknownEither(Ids.CaseId),
  },
  {
    prefix: "batch",
    generate: Ids.generateBatchId,
    parse: Ids.parseBatchId,
    decode: Schema.decodeUnknownEither(Ids.BatchId),
  },
]

const refusal = (kind: Kind, input: string): InvalidId => {
  const result = kind.parse(input)
  if (Either.isRight(result)) return assert.fail(`${kind.prefix}: expected ${JSON.stringify(input)} to be refused`)
  return result.left
}

for (const kind of kinds) {
  const { prefix } = kind
  const others = kinds.filter((k) => k.prefix !== prefix).map((k) => k.prefix)

  describe(`${prefix} ids`, () => {
    it(`generate gives ${prefix}_<26-char ULID>`, () => {
      const id = kind.generate()
      expect(id).toMatch(new RegExp(`^${prefix}_${ULID_SHAPE}$`))
      expect(id.length).toBe(prefix.length + 1 + 26)
    })

    it("generate stamps the current time into the ULID", () => {
      const before = Date.now()
      const id = kind.generate()
      const after = Date.now()
      const at = ulidTime(id.slice(prefix.length + 1))
      // A monotonic generator may run a little ahead of the wall clock, never behind it.
      expect(at).toBeGreaterThanOrEqual(before)
      expect(at).toBeLessThanOrEqual(after + 1000)
    })

    it("parse accepts the prefixed form unchanged", () => {
      expect(kind.parse(`${prefix}_${VALID}`)).toEqual(Either.right(`${prefix}_${VALID}`))
    })

    it("parse accepts a bare ULID and yields the prefixed form", () => {
      expect(kind.parse(VALID)).toEqual(Either.right(`${prefix}_${VALID}`))
    })

    it("parse normalises a lowercase ULID to uppercase", () => {
      expect(kind.parse(VALID.toLowerCase())).toEqual(Either.right(`${prefix}_${VALID}`))
      expect(kind.parse(`${prefix}_${VALID.toLowerCase()}`)).toEqual(Either.right(`${prefix}_${VALID}`))
    })

    it("parse round-trips generated ids", () => {
      for (let i = 0; i < 50; i++) {
        const id = kind.generate()
        expect(kind.parse(id)).toEqual(Either.right(id))
      }
    })

    it("parse refuses another kind's prefix", () => {
      for (const other of others) {
        const error = refusal(kind, `${other}_${VALID}`)
        expect(error._tag).toBe("InvalidId")
        expect(error.input).toBe(`${other}_${VALID}`)
      }
    })

    it("parse refuses garbage, empty input and a bare prefix", () => {
      for (const input of [
        "garbage",
        "",
        `${prefix}_`,
        `${prefix}`,
        "_",
        `${prefix}-${VALID}`,
        `${prefix}_${prefix}_${VALID}`,
      ]) {
        const error = refusal(kind, input)
        expect(error._tag, JSON.stringify(input)).toBe("InvalidId")
        expect(error.input).toBe(input)
      }
    })

    it("parse refuses a ULID of the wrong length", () => {
      expect(refusal(kind, `${VALID}0`)._tag).toBe("InvalidId")
      expect(refusal(kind, VALID.slice(0, 25))._tag).toBe("InvalidId")
      expect(refusal(kind, `${prefix}_${VALID}0`)._tag).toBe("InvalidId")
    })

    it("parse refuses a ULID whose timestamp is out of range (first char above 7)", () => {
      expect(refusal(kind, `8${VALID.slice(1)}`)._tag).toBe("InvalidId")
      expect(refusal(kind, `${prefix}_Z${VALID.slice(1)}`)._tag).toBe("InvalidId")
      // The largest valid ULID is still fine.
      expect(kind.parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")).toEqual(Either.right(`${prefix}_7ZZZZZZZZZZZZZZZZZZZZZZZZZ`))
    })

    it("parse refuses characters outside Crockford base32 (U) and non-alphanumerics", () => {
      expect(refusal(kind, `${VALID.slice(0, 25)}U`)._tag).toBe("InvalidId")
      expect(refusal(kind, `${VALID.slice(0, 25)}-`)._tag).toBe("InvalidId")
      expect(refusal(kind, `${VALID.slice(0, 25)} `)._tag).toBe("InvalidId")
    })

    it("ids generated in sequence within one millisecond sort in generation order", () => {
      const ids = Array.from({ length: 1000 }, () => kind.generate())
      expect(new Set(ids).size).toBe(ids.length)
      const sorted = [...ids].sort()
      expect(sorted).toEqual(ids)
      // Byte order too, which is what a database with C collation uses.
      const byBytes = [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
      expect(byBytes).toEqual(ids)
    })

    it("the schema accepts the stored (prefixed) form and refuses the bare ULID", () => {
      const decode = kind.decode
      expect(Either.isRight(decode(`${prefix}_${VALID}`))).toBe(true)
      expect(Either.isLeft(decode(VALID))).toBe(true)
      expect(Either.isLeft(decode(`${prefix}_${VALID.toLowerCase()}`))).toBe(true)
      for (const other of others) expect(Either.isLeft(decode(`${other}_${VALID}`))).toBe(true)
    })
  })
}

describe("id ordering across a pause", () => {
  it("an id minted later sorts after one minted earlier", async () => {
    const first = Ids.generateRunId()
    await new Promise((resolve) => setTimeout(resolve, 5))
    const second = Ids.generateRunId()
    expect(first < second).toBe(true)
  })
})

describe("numeric ids", () => {
  const ok = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
    Either.isRight(Schema.decodeUnknownEither(schema)(value))

  it("StepId is an integer 0 … 2³²−1", () => {
    expect(ok(Ids.StepId, 0)).toBe(true)
    expect(ok(Ids.StepId, 2 ** 32 - 1)).toBe(true)
    expect(ok(Ids.StepId, -1)).toBe(false)
    expect(ok(Ids.StepId, 2 ** 32)).toBe(false)
    expect(ok(Ids.StepId, 1.5)).toBe(false)
  })

  it("Seq and Epoch start at 1", () => {
    for (const schema of [Ids.Seq, Ids.Epoch]) {
      expect(ok(schema, 0)).toBe(false)
      expect(ok(schema, -1)).toBe(false)
      expect(ok(schema, 1)).toBe(true)
      expect(ok(schema, 2.5)).toBe(false)
    }
  })

  it("CaseVersion is an integer ≥ 0", () => {
    expect(ok(Ids.CaseVersion, 0)).toBe(true)
    expect(ok(Ids.CaseVersion, 41)).toBe(true)
    expect(ok(Ids.CaseVersion, -1)).toBe(false)
    expect(ok(Ids.CaseVersion, 0.5)).toBe(false)
  })

  it("StepId is shown s<n> and CaseVersion v<n>", () => {
    expect(Ids.showStep(Ids.StepId.make(7))).toBe("s7")
    expect(Ids.showStep(Ids.StepId.make(0))).toBe("s0")
    expect(Ids.showVersion(Ids.CaseVersion.make(3))).toBe("v3")
  })
})
