/**
 * How an export tells a sealed run by its records alone: a run whose last record concludes it
 * `succeeded`, `quarantined`, `cancelled` or `compensated` is sealed with that outcome, as the
 * runtime seals it (Driver), and a run whose records are all `Swept` evidence is sealed `swept`,
 * as the sweeper seals it. Failed and exhausted runs stay open for resume (§6.5, §7.11). Restore
 * seals by this rule, and `verify` holds a logged run's leaf to it.
 */
import { Option } from "effect"
import type * as Journal from "../domain/Journal.js"

const SEALING: ReadonlySet<Journal.RunOutcome> = new Set(["succeeded", "quarantined", "cancelled", "compensated"])

/** The outcome a run with this last record is sealed with (`allSwept`: every record was `Swept`), or none if it stays open. */
export const outcomeOf = (last: Journal.Kind, allSwept: boolean): Option.Option<Journal.RunOutcome> =>
  last.kind === "RunSealed" && SEALING.has(last.outcome)
    ? Option.some(last.outcome)
    : allSwept
      ? Option.some("swept")
      : Option.none()
