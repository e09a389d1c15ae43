/**
 * Obligations: deadlines on business calendars, fixed when registered.
 */
import { Option, Schema } from "effect"
import { Digest } from "./Digest.js"
import { CaseId } from "./Ids.js"
import { Json } from "./Json.js"
import { Timestamp } from "./Time.js"

export const DeadlineState = Schema.Literal("pending", "warned", "breached", "met", "cancelled")
export type DeadlineState = typeof DeadlineState.Type

/** Pending and warned deadlines are outstanding: they block closing their case. */
export const isOutstanding = (state: DeadlineState): boolean => state === "pending" || state === "warned"

/** What a calendar resolves: a kind (`minutes`, `working-days`, …) and its parameters. */
export class DeadlineSpec extends Schema.Class<DeadlineSpec>("DeadlineSpec")({
  kind: Schema.String,
  params: Json,
}) {}

export const minutes = (n: number): DeadlineSpec => new DeadlineSpec({ kind: "minutes", params: { n } })
export const hours = (n: number): DeadlineSpec => new DeadlineSpec({ kind: "hours", params: { n } })
export const days = (n: number): DeadlineSpec => new DeadlineSpec({ kind: "days", params: { n } })

export class Deadline extends Schema.Class<Deadline>("Deadline")({
  case: CaseId,
  /** Unique within its case. */
  name: Schema.String,
  /** Fixed at registration and never recomputed, even if the calendar changes. */
  resolvedAt: Timestamp,
  /** The digest of the calendar that resolved it. */
  calendarDigest: Digest,
  warnAt: Schema.OptionFromSelf(Timestamp),
  state: DeadlineState,
}) {}

/** Outstanding and its due instant has come (inclusive). */
export const isDue = (d: Deadline, now: Timestamp): boolean => isOutstanding(d.state) && now >= d.resolvedAt

/** Still pending, with a warning instant that has come while the due instant has not. */
export const needsWarning = (d: Deadline, now: Timestamp): boolean =>
  d.state === "pending" &&
  Option.match(d.warnAt, { onNone: () => false, onSome: (w) => w <= now && now < d.resolvedAt })
