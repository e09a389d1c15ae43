/**
 * Each tenant's emergency stop in process memory, shared by the two memory stores that meet it:
 * the quota store sets and reads it (§5.6), and the journal store refuses a run's opening append
 * while it is set (`AppendOptions.open`), as the SQL stores share the `quota_halted` table. One
 * value per backend build, so a halt stops exactly what shares the build's stores.
 */
import { Option } from "effect"
import type { TenantId } from "../../../domain/Tenant.js"

export interface Halts {
  readonly get: (tenant: TenantId) => Option.Option<string>
  /** None lifts the stop (a no-op when unset); some replaces any earlier reason. */
  readonly set: (tenant: TenantId, reason: Option.Option<string>) => void
}

export const make = (): Halts => {
  const reasons = new Map<TenantId, string>()
  return {
    get: (tenant) => Option.fromNullable(reasons.get(tenant)),
    set: (tenant, reason) => {
      if (Option.isSome(reason)) reasons.set(tenant, reason.value)
      else reasons.delete(tenant)
    },
  }
}
