/**
 * What a step asks a wait for and what the wait answers (§7.6, §7.8): the shapes the step
 * context (`StepCtx`) names and `Waits` implements, apart from both so neither imports the other.
 */
import type { CorrelationKey } from "../domain/CorrelationKey.js"
import type { Json } from "../domain/Json.js"
import type { Timestamp } from "../domain/Time.js"

/** What `cx.awaitEvent` hands the step: the payload, untrusted, with where it came from. */
export interface Received {
  readonly payload: Json
  readonly source: string
  /** `event:<kind>`. */
  readonly provenance: string
}

export interface AwaitSpec {
  readonly kind: string
  readonly correlation: ReadonlyArray<CorrelationKey>
  /** The name of an obligation registered on the run's case: the wait lasts until it falls due. */
  readonly deadline: string
}

/** What a sleep answers once its timer fired: the due instant (§7.8), as the journal holds it. */
export interface Fired {
  readonly firedAt: Timestamp
}
