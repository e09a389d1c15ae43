/**
 * Calendars turn a deadline spec into an instant. Every deadline stores the digest of the
 * calendar that resolved it, so a later change of calendar is visible, never silent.
 */
import { Context, Effect, Layer } from "effect"
import { BadParams, type CalendarError, OutOfRange, UnknownKind } from "../errors/CalendarError.js"
import type { DeadlineSpec } from "./Deadline.js"
import * as Digest from "./Digest.js"
import * as Time from "./Time.js"

export class Calendar extends Context.Tag("agentplane/Calendar")<
  Calendar,
  {
    /** The instant `spec` falls due counted from `from`; unknown kinds and bad params are refused. */
    readonly resolve: (from: Time.Timestamp, spec: DeadlineSpec) => Effect.Effect<Time.Timestamp, CalendarError>
    /** Identifies this calendar's rules; stored with every deadline it resolves. */
    readonly digest: Digest.Digest
  }
>() {}

const SECONDS: Readonly<Record<string, number>> = { minutes: 60, hours: 3600, days: 86_400 }

// The largest instant a Date holds: ±8.64e15 ms.
const MAX_SECONDS = 8.64e12

/** Plain elapsed time: `minutes`, `hours`, `days` with `{"n": <non-negative safe integer>}`. */
export const wallClock: Calendar["Type"] = {
  digest: Digest.of("agentplane.calendar.wallclock.v1"),
  resolve: (from, spec) =>
    Effect.suspend((): Effect.Effect<Time.Timestamp, CalendarError> => {
      const unit = SECONDS[spec.kind]
      if (unit === undefined || !Object.hasOwn(SECONDS, spec.kind))
        return Effect.fail(new UnknownKind({ kind: spec.kind }))
      const params = spec.params
      const n =
        typeof params === "object" && params !== null && !Array.isArray(params)
          ? (params as Record<string, unknown>).n
          : undefined
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
        return Effect.fail(
          new BadParams({
            kind: spec.kind,
            detail: `"n" must be a non-negative safe integer, got ${JSON.stringify(n)}`,
          }),
        )
      }
      const at = from + n * unit
      if (!Number.isSafeInteger(at) || Math.abs(at) > MAX_SECONDS)
        return Effect.fail(new OutOfRange({ kind: spec.kind }))
      return Effect.succeed(Time.Timestamp.make(at))
    }),
}

export const layerWallClock: Layer.Layer<Calendar> = Layer.succeed(Calendar, wallClock)
