import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck, Schema } from "effect"
import * as Time from "../../src/domain/Time.js"

const T = (n: number) => Time.Timestamp.make(n)

describe("Time.fromSeconds", () => {
  it("truncates sub-second input: 12.9 → 12", () => {
    expect(Time.fromSeconds(12.9)).toBe(12)
    expect(Time.fromSeconds(12.1)).toBe(12)
    expect(Time.fromSeconds(12)).toBe(12)
    expect(Time.fromSeconds(0.999)).toBe(0)
  })

  it("always yields a whole number", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.double({ min: 0, max: 1e12, noNaN: true }), (s) => {
        const t = Time.fromSeconds(s)
        expect(Number.isInteger(t)).toBe(true)
        expect(t).toBeLessThanOrEqual(s)
        expect(s - t).toBeLessThan(1)
      }),
    )
  })
})

describe("Time.fromMillis / fromDate", () => {
  it("gives the second a millisecond instant falls in: 1999 ms → 1", () => {
    expect(Time.fromMillis(1999)).toBe(1)
    expect(Time.fromMillis(2000)).toBe(2)
    expect(Time.fromMillis(999)).toBe(0)
    expect(Time.fromMillis(0)).toBe(0)
  })

  it("fromDate uses the Date's instant", () => {
    expect(Time.fromDate(new Date(1999))).toBe(1)
    expect(Time.fromDate(new Date("2001-09-09T01:46:40.750Z"))).toBe(1_000_000_000)
  })
})

describe("Time.toRfc3339", () => {
  it("renders the epoch as 1970-01-01T00:00:00Z", () => {
    expect(Time.toRfc3339(T(0))).toBe("1970-01-01T00:00:00Z")
  })

  it("renders known instants in UTC with no fractional seconds", () => {
    expect(Time.toRfc3339(T(1_000_000_000))).toBe("2001-09-09T01:46:40Z")
    expect(Time.toRfc3339(T(1_798_718_400))).toBe("2026-12-31T12:00:00Z")
    expect(Time.toRfc3339(T(-1))).toBe("1969-12-31T23:59:59Z")
    expect(Time.toRfc3339(T(951_782_400))).toBe("2000-02-29T00:00:00Z")
  })

  it("is always YYYY-MM-DDTHH:MM:SSZ and parses back to the same second", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.integer({ min: -62_135_596_800, max: 253_402_300_799 }), (s) => {
        const text = Time.toRfc3339(T(s))
        expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
        expect(Date.parse(text) / 1000).toBe(s)
      }),
    )
  })
})

describe("Time.ageSecs", () => {
  it("is now − openedAt", () => {
    expect(Time.ageSecs(T(50), T(100))).toBe(50)
    expect(Time.ageSecs(T(100), T(100))).toBe(0)
  })

  it("reads 0 rather than a negative age under clock skew", () => {
    expect(Time.ageSecs(T(100), T(50))).toBe(0)
  })

  it("is never negative", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: -1e12, max: 1e12 }),
        FastCheck.integer({ min: -1e12, max: 1e12 }),
        (opened, now) => {
          const age = Time.ageSecs(T(opened), T(now))
          expect(age).toBeGreaterThanOrEqual(0)
          expect(age).toBe(Math.max(0, now - opened))
        },
      ),
    )
  })
})

describe("Timestamp schema", () => {
  const decode = Schema.decodeUnknownEither(Time.Timestamp)
  it("takes whole seconds, negative ones too", () => {
    expect(decode(0)).toEqual(Either.right(0))
    expect(decode(-5)).toEqual(Either.right(-5))
  })
  it("refuses fractions, non-safe integers and non-numbers", () => {
    expect(Either.isLeft(decode(1.5))).toBe(true)
    expect(Either.isLeft(decode(2 ** 53))).toBe(true)
    expect(Either.isLeft(decode("12"))).toBe(true)
    expect(Either.isLeft(decode(Number.NaN))).toBe(true)
  })
})
