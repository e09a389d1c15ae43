/**
 * Whole Unix seconds: the only unit of time in agentplane's stores.
 */
import { Schema } from "effect"

/** An instant in whole Unix seconds (may be before 1970; never fractional). */
export const Timestamp = Schema.Int.pipe(
  Schema.filter((n) => Number.isSafeInteger(n), { message: () => "a timestamp must be a safe integer" }),
  Schema.brand("Timestamp"),
)
export type Timestamp = typeof Timestamp.Type

/** Truncates sub-second input toward negative infinity, as §3 says: 12.9 s is second 12. */
export const fromSeconds = (seconds: number): Timestamp => Timestamp.make(Math.floor(seconds))

/** The second a millisecond instant falls in. */
export const fromMillis = (millis: number): Timestamp => Timestamp.make(Math.floor(millis / 1000))

export const fromDate = (date: Date): Timestamp => fromMillis(date.getTime())

/** RFC 3339 UTC, the wire form (`2026-11-30T12:00:00Z`). */
export const toRfc3339 = (at: Timestamp): string => new Date(at * 1000).toISOString().replace(".000Z", "Z")

/** `now − openedAt` in whole seconds; clock skew that would make it negative reads 0. */
export const ageSecs = (openedAt: Timestamp, now: Timestamp): number => Math.max(0, now - openedAt)
