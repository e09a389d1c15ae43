import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { Calendar, layerWallClock, wallClock } from "../../src/domain/Calendar.js"
import { DeadlineSpec, days, hours, minutes } from "../../src/domain/Deadline.js"
import * as Digest from "../../src/domain/Digest.js"
import type { Json } from "../../src/domain/Json.js"
import * as Time from "../../src/domain/Time.js"

const FROM = Time.Timestamp.make(1_700_000_000)
const MAX = 8.64e12

const spec = (kind: string, params: Json) => new DeadlineSpec({ kind, params })

describe("DeadlineSpec constructors", () => {
  it('minutes/hours/days give that kind with params {"n": n}', () => {
    expect(minutes(5)).toMatchObject({ kind: "minutes", params: { n: 5 } })
    expect(hours(2)).toMatchObject({ kind: "hours", params: { n: 2 } })
    expect(days(3)).toMatchObject({ kind: "days", params: { n: 3 } })
  })
})

describe("Calendar.wallClock resolve", () => {
  it.effect("minutes add n × 60 seconds", () =>
    Effect.gen(function* () {
      expect(yield* wallClock.resolve(FROM, minutes(5))).toBe(FROM + 300)
      expect(yield* wallClock.resolve(FROM, minutes(1))).toBe(FROM + 60)
    }),
  )

  it.effect("hours add n × 3600 seconds", () =>
    Effect.gen(function* () {
      expect(yield* wallClock.resolve(FROM, hours(2))).toBe(FROM + 7200)
    }),
  )

  it.effect("days add n × 86400 seconds (no calendar or DST adjustment)", () =>
    Effect.gen(function* () {
      expect(yield* wallClock.resolve(FROM, days(3))).toBe(FROM + 259_200)
      // Across the 2026-03-29 EU DST change: still exactly 86400 s.
      const beforeDst = Time.Timestamp.make(Date.UTC(2026, 2, 28, 12) / 1000)
      expect(yield* wallClock.resolve(beforeDst, days(1))).toBe(Date.UTC(2026, 2, 29, 12) / 1000)
    }),
  )

  it.effect("n = 0 gives from for every kind", () =>
    Effect.gen(function* () {
      for (const s of [minutes(0), hours(0), days(0)]) {
        expect(yield* wallClock.resolve(FROM, s)).toBe(FROM)
      }
    }),
  )

  it.effect("works from instants before 1970", () =>
    Effect.gen(function* () {
      expect(yield* wallClock.resolve(Time.Timestamp.make(-1000), days(1))).toBe(85_400)
    }),
  )

  it.effect("the params may be built by hand, not only by the constructors", () =>
    Effect.gen(function* () {
      expect(yield* wallClock.resolve(FROM, spec("hours", { n: 1 }))).toBe(FROM + 3600)
    }),
  )

  it.effect("is reachable through the Calendar service layer", () =>
    Effect.gen(function* () {
      const calendar = yield* Calendar
      expect(yield* calendar.resolve(FROM, minutes(10))).toBe(FROM + 600)
      expect(calendar.digest).toBe(wallClock.digest)
    }).pipe(Effect.provide(layerWallClock)),
  )

  describe("UnknownKind", () => {
    for (const kind of ["weeks", "working-days", "", "Minutes", "seconds", "constructor", "__proto__", "toString"]) {
      it.effect(`kind ${JSON.stringify(kind)} is UnknownKind{kind}`, () =>
        Effect.gen(function* () {
          const error = yield* Effect.flip(wallClock.resolve(FROM, spec(kind, { n: 1 })))
          expect(error._tag).toBe("UnknownKind")
          expect(error).toMatchObject({ kind })
        }),
      )
    }
  })

  describe("BadParams", () => {
    const bad: ReadonlyArray<readonly [string, Json]> = [
      ["n missing", {}],
      ["another key instead of n", { m: 3 }],
      ["n = -1", { n: -1 }],
      ["n = 1.5", { n: 1.5 }],
      ['n = "3"', { n: "3" }],
      ["n = 2**53", { n: 2 ** 53 }],
      ["n = null", { n: null }],
      ["n = true", { n: true }],
      ["n = [3]", { n: [3] }],
      ["params null", null],
      ["params a number", 3],
      ["params an array", [3]],
    ]
    for (const kind of ["minutes", "hours", "days"]) {
      for (const [label, params] of bad) {
        it.effect(`${kind}: ${label} is BadParams{kind, detail}`, () =>
          Effect.gen(function* () {
            const error = yield* Effect.flip(wallClock.resolve(FROM, spec(kind, params)))
            expect(error._tag).toBe("BadParams")
            expect(error.kind).toBe(kind)
            if (error._tag === "BadParams") expect(error.detail.length).toBeGreaterThan(0)
          }),
        )
      }
    }

    it.effect("via the constructors too", () =>
      Effect.gen(function* () {
        for (const s of [minutes(-1), hours(1.5), days(2 ** 53)]) {
          const result = yield* Effect.either(wallClock.resolve(FROM, s))
          expect(Either.isLeft(result) && result.left._tag).toBe("BadParams")
        }
      }),
    )
  })

  describe("OutOfRange", () => {
    it.effect("a result past +8.64e12 seconds is OutOfRange{kind}", () =>
      Effect.gen(function* () {
        const from = Time.Timestamp.make(MAX - 59)
        const error = yield* Effect.flip(wallClock.resolve(from, minutes(1)))
        expect(error._tag).toBe("OutOfRange")
        expect(error.kind).toBe("minutes")
      }),
    )

    it.effect("a result of exactly 8.64e12 seconds (the last instant a Date holds) is fine", () =>
      Effect.gen(function* () {
        const at = yield* wallClock.resolve(Time.Timestamp.make(MAX - 60), minutes(1))
        expect(at).toBe(MAX)
        expect(Number.isNaN(new Date(at * 1000).getTime())).toBe(false)
      }),
    )

    it.effect("a valid but huge n (MAX_SAFE_INTEGER days) is OutOfRange, not BadParams", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(wallClock.resolve(FROM, days(Number.MAX_SAFE_INTEGER)))
        expect(error._tag).toBe("OutOfRange")
        expect(error.kind).toBe("days")
      }),
    )

    it.effect("n large enough to pass +8.64e12 from zero is OutOfRange", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(wallClock.resolve(Time.Timestamp.make(0), days(100_000_001)))
        expect(error._tag).toBe("OutOfRange")
        expect(yield* wallClock.resolve(Time.Timestamp.make(0), days(100_000_000))).toBe(8.64e12)
      }),
    )

    it.effect("a result below −8.64e12 seconds is OutOfRange", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(wallClock.resolve(Time.Timestamp.make(-MAX - 1), minutes(0)))
        expect(error._tag).toBe("OutOfRange")
        expect(yield* wallClock.resolve(Time.Timestamp.make(-MAX), minutes(0))).toBe(-MAX)
      }),
    )
  })

  it("errors have readable messages", async () => {
    const errors = await Promise.all([
      Effect.runPromise(Effect.flip(wallClock.resolve(FROM, spec("weeks", { n: 1 })))),
      Effect.runPromise(Effect.flip(wallClock.resolve(FROM, minutes(-1)))),
      Effect.runPromise(Effect.flip(wallClock.resolve(Time.Timestamp.make(MAX), minutes(1)))),
    ])
    for (const error of errors) {
      expect(error.message.length).toBeGreaterThan(10)
      expect(error.message).not.toBe("An error has occurred")
    }
    expect(errors[0]?.message).toContain("weeks")
  })
})

describe("Calendar.wallClock digest", () => {
  it('is Digest.of("agentplane.calendar.wallclock.v1")', () => {
    expect(wallClock.digest).toBe(Digest.of("agentplane.calendar.wallclock.v1"))
    expect(wallClock.digest).toBe(createHash("sha256").update("agentplane.calendar.wallclock.v1", "utf8").digest("hex"))
  })
})
