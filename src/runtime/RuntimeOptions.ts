/**
 * How a runtime instance is set up (`Runtime.layer`): its lease owner and TTL,
 * the tenant quotas, and the test-only crash points and fakes.
 */
import type { Effect } from "effect"
import type * as Quota from "../domain/Quota.js"
import type * as EffectKind from "./EffectKind.js"
import type { CrashPoint } from "./Execution.js"

export interface Options {
  /** This instance's lease owner name; default `runtime-<random>`. */
  readonly owner?: string
  /**
   * Lease TTL in whole seconds (≥ 1), renewed every third of it while a run executes or waits for
   * a permit; default 30. Expiries are whole seconds, so a 1 s lease can lapse at a second
   * boundary under its live owner: 2 is the shortest that holds.
   */
  readonly leaseTtlSecs?: number
  /** The tenant's ceilings; default unlimited. */
  readonly quota?: (tenant: string) => Quota.TenantQuota
  /** Tests only: stop an execution at a boundary as if the process died there. */
  readonly crash?: (point: CrashPoint, kind: string, attempt: number) => boolean
  /** How many woken runs resume in the background at once; default 16. */
  readonly wakeConcurrency?: number
  /** Tests only: acts that replace the declared act of an effect kind, by kind string. */
  readonly fakes?: Readonly<Record<string, Fake>>
}

/** A stand-in act: gets the arguments and the attempt, answers the kind's success type (or a rejection / `Transient`). */
export type Fake = (args: unknown, attempt: EffectKind.Attempt) => Effect.Effect<unknown, unknown>
