/**
 * Timers: waits on the clock instead of on a message.
 */
import { Schema } from "effect"
import { EffectKey } from "./EffectKey.js"
import { CaseId, RunId, StepId } from "./Ids.js"
import { Phase } from "./Phase.js"
import { Timestamp } from "./Time.js"

/** A wait on the clock; one per (run, effect), and its `fireAt` never moves once armed. */
export class Timer extends Schema.Class<Timer>("Timer")({
  run: RunId,
  case: Schema.OptionFromSelf(CaseId),
  effect: EffectKey,
  step: StepId,
  phase: Phase,
  fireAt: Timestamp,
}) {}

/** How long a sweeper's claim on a due timer lasts before another sweeper may take it. */
export const CLAIM_LEASE_SECS = 60

/** A claim taken at `claimedAt` has lapsed at `now` (inclusive: a claim exactly 60 s old is free). */
export const claimLapsed = (claimedAt: Timestamp, now: Timestamp): boolean => claimedAt <= now - CLAIM_LEASE_SECS
