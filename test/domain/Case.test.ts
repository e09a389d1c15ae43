import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Schema } from "effect"
import * as Case from "../../src/domain/Case.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { CaseVersion, generateCaseId, generateRunId } from "../../src/domain/Ids.js"
import { Timestamp } from "../../src/domain/Time.js"

const fields = () => ({
  id: generateCaseId(),
  kind: "invoice-dispute",
  status: "open" as const,
  correlation: [CorrelationKey.make("invoice", "INV-7")],
  state: null,
  version: CaseVersion.make(0),
  openedAt: Timestamp.make(1_700_000_000),
  runs: [generateRunId()],
})

describe("CaseStatus", () => {
  const decode = Schema.decodeUnknownEither(Case.CaseStatus)

  it("decodes exactly the five stored strings", () => {
    for (const s of ["open", "awaiting_external", "awaiting_human", "escalated", "closed"]) {
      expect(decode(s)).toEqual(Either.right(s))
    }
  })

  it("refuses any other string, with no fallback", () => {
    for (const s of ["Open", "awaiting-external", "AwaitingHuman", "", "pending", "closed "]) {
      expect(Either.isLeft(decode(s)), JSON.stringify(s)).toBe(true)
    }
  })
})

describe("Case record", () => {
  it("holds a new case: state null, version 0", () => {
    const c = new Case.Case(fields())
    expect(c.state).toBeNull()
    expect(c.version).toBe(0)
    expect(c.status).toBe("open")
  })

  it("keeps runs in attachment order", () => {
    const runs = [generateRunId(), generateRunId(), generateRunId()]
    const c = new Case.Case({ ...fields(), runs: [runs[2], runs[0], runs[1]] as never })
    expect(c.runs).toEqual([runs[2], runs[0], runs[1]])
  })

  it("refuses a negative version, a run id as case id, and an unknown status", () => {
    expect(() => new Case.Case({ ...fields(), version: -1 as never })).toThrow()
    expect(() => new Case.Case({ ...fields(), id: generateRunId() as never })).toThrow()
    expect(() => new Case.Case({ ...fields(), status: "pending" as never })).toThrow()
  })

  it("decodes from its encoded form and back", () => {
    const c = new Case.Case({ ...fields(), state: { step: 2, notes: ["é"] } })
    const encoded = Schema.encodeSync(Case.Case)(c)
    const decoded = Schema.decodeUnknownSync(Case.Case)(JSON.parse(JSON.stringify(encoded)))
    expect(decoded).toEqual(c)
  })
})

describe("Correlation", () => {
  it("isNew is true for Opened and false for Attached", () => {
    const id = generateCaseId()
    expect(Case.isNew(Case.Correlation.Opened({ case: id }))).toBe(true)
    expect(Case.isNew(Case.Correlation.Attached({ case: id }))).toBe(false)
  })
})

describe("CaseCensus", () => {
  it("the empty census is 0 open, no oldest age, 0 due", () => {
    expect(Case.emptyCensus.open).toBe(0)
    expect(Option.isNone(Case.emptyCensus.oldestAgeSecs)).toBe(true)
    expect(Case.emptyCensus.due).toBe(0)
  })

  it("refuses negative counts", () => {
    expect(() => new Case.CaseCensus({ open: -1, oldestAgeSecs: Option.none(), due: 0 })).toThrow()
    expect(() => new Case.CaseCensus({ open: 0, oldestAgeSecs: Option.some(-5), due: 0 })).toThrow()
  })
})
