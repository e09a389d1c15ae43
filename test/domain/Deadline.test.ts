import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Schema } from "effect"
import * as Deadline from "../../src/domain/Deadline.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateCaseId } from "../../src/domain/Ids.js"
import { Timestamp } from "../../src/domain/Time.js"

const T = (n: number) => Timestamp.make(n)

const deadline = (state: Deadline.DeadlineState, resolvedAt: number, warnAt?: number) =>
  new Deadline.Deadline({
    case: generateCaseId(),
    name: "respond",
    resolvedAt: T(resolvedAt),
    calendarDigest: Digest.of("agentplane.calendar.wallclock.v1"),
    warnAt: warnAt === undefined ? Option.none() : Option.some(T(warnAt)),
    state,
  })

const ALL: ReadonlyArray<Deadline.DeadlineState> = ["pending", "warned", "breached", "met", "cancelled"]

describe("DeadlineState", () => {
  it("decodes exactly the five stored strings", () => {
    const decode = Schema.decodeUnknownEither(Deadline.DeadlineState)
    for (const s of ALL) expect(decode(s)).toEqual(Either.right(s))
    for (const s of ["Pending", "overdue", "", "open", "done"]) expect(Either.isLeft(decode(s)), s).toBe(true)
  })

  it("open (outstanding) is pending and warned only", () => {
    expect(ALL.filter(Deadline.isOutstanding)).toEqual(["pending", "warned"])
  })
})

describe("Deadline.isDue", () => {
  for (const state of ["pending", "warned"] as const) {
    it(`${state}: false before resolvedAt, true at it (inclusive) and after`, () => {
      const d = deadline(state, 1000, 900)
      expect(Deadline.isDue(d, T(0))).toBe(false)
      expect(Deadline.isDue(d, T(999))).toBe(false)
      expect(Deadline.isDue(d, T(1000))).toBe(true)
      expect(Deadline.isDue(d, T(1001))).toBe(true)
      expect(Deadline.isDue(d, T(1_000_000))).toBe(true)
    })
  }

  for (const state of ["met", "breached", "cancelled"] as const) {
    it(`${state}: never due, even long after resolvedAt`, () => {
      const d = deadline(state, 1000)
      for (const now of [999, 1000, 1001, 1_000_000]) expect(Deadline.isDue(d, T(now))).toBe(false)
    })
  }

  it("works for instants before 1970", () => {
    const d = deadline("pending", -100)
    expect(Deadline.isDue(d, T(-101))).toBe(false)
    expect(Deadline.isDue(d, T(-100))).toBe(true)
  })

  it("does not depend on warnAt", () => {
    expect(Deadline.isDue(deadline("pending", 1000), T(1000))).toBe(true)
    expect(Deadline.isDue(deadline("pending", 1000, 1500), T(1000))).toBe(true)
  })
})

describe("Deadline.needsWarning", () => {
  it("pending with warnAt: true exactly on warnAt <= now < resolvedAt", () => {
    const d = deadline("pending", 200, 100)
    expect(Deadline.needsWarning(d, T(0))).toBe(false)
    expect(Deadline.needsWarning(d, T(99))).toBe(false)
    expect(Deadline.needsWarning(d, T(100))).toBe(true)
    expect(Deadline.needsWarning(d, T(150))).toBe(true)
    expect(Deadline.needsWarning(d, T(199))).toBe(true)
    expect(Deadline.needsWarning(d, T(200))).toBe(false)
    expect(Deadline.needsWarning(d, T(201))).toBe(false)
  })

  it("pending without warnAt never needs a warning", () => {
    const d = deadline("pending", 200)
    for (const now of [0, 100, 199, 200, 300]) expect(Deadline.needsWarning(d, T(now))).toBe(false)
  })

  it("is false for a warned deadline (already warned)", () => {
    const d = deadline("warned", 200, 100)
    for (const now of [100, 150, 199]) expect(Deadline.needsWarning(d, T(now))).toBe(false)
  })

  for (const state of ["met", "breached", "cancelled"] as const) {
    it(`is false for a ${state} deadline inside the window`, () => {
      expect(Deadline.needsWarning(deadline(state, 200, 100), T(150))).toBe(false)
    })
  }

  it("is never true when warnAt equals resolvedAt (empty window)", () => {
    const d = deadline("pending", 200, 200)
    for (const now of [199, 200, 201]) expect(Deadline.needsWarning(d, T(now))).toBe(false)
  })

  it("is never true when warnAt is after resolvedAt", () => {
    const d = deadline("pending", 200, 300)
    for (const now of [150, 200, 250, 300, 350]) expect(Deadline.needsWarning(d, T(now))).toBe(false)
  })

  it("a pending deadline needing a warning is not yet due, and once due needs none", () => {
    const d = deadline("pending", 200, 100)
    for (let now = 0; now <= 300; now += 1) {
      expect(Deadline.needsWarning(d, T(now)) && Deadline.isDue(d, T(now))).toBe(false)
    }
  })
})

describe("Deadline record", () => {
  it("refuses a run id where a case id belongs", () => {
    expect(
      () =>
        new Deadline.Deadline({
          case: "run_01ARZ3NDEKTSV4RRFFQ69G5FAV" as never,
          name: "x",
          resolvedAt: T(1),
          calendarDigest: Digest.ZERO,
          warnAt: Option.none(),
          state: "pending",
        }),
    ).toThrow()
  })

  it("refuses an unknown state", () => {
    expect(() => deadline("overdue" as never, 1)).toThrow()
  })
})
