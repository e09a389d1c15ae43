/**
 * Each tenant's sealed leaves in log-position order, in process memory: the memory journal store
 * appends a leaf as it seals a run (its position is the tenant's count so far: dense from 0,
 * tenants apart, as `log_sequence` numbers them in SQL), and the memory log store reads them to
 * integrate. One value per backend build (`MemoryBackend`), as the SQL stores share `run_seal`.
 */
import type { RunId } from "../../../domain/Ids.js"
import type { LogLeaf } from "../../../domain/LogLeaf.js"
import type { TenantId } from "../../../domain/Tenant.js"

export interface Sequenced {
  /** Appends the tenant's next leaf; answers its position. */
  readonly push: (tenant: TenantId, leaf: LogLeaf) => number
  /** How many leaves the tenant has: the next position. */
  readonly size: (tenant: TenantId) => number
  /** Drops the tenant's leaves from `size` on: a seal undone because its alongside failed. */
  readonly truncate: (tenant: TenantId, size: number) => void
  /** Up to `max` leaves from position `from` on, in order. */
  readonly from: (tenant: TenantId, from: number, max: number) => ReadonlyArray<LogLeaf>
  /** The position of the run's leaf, if the run is sealed. */
  readonly positionOf: (tenant: TenantId, run: RunId) => number | undefined
}

export const make = (): Sequenced => {
  const logs = new Map<TenantId, { leaves: Array<LogLeaf>; positions: Map<RunId, number> }>()
  const of = (tenant: TenantId) => {
    let log = logs.get(tenant)
    if (log === undefined) {
      log = { leaves: [], positions: new Map() }
      logs.set(tenant, log)
    }
    return log
  }
  return {
    push: (tenant, leaf) => {
      const log = of(tenant)
      log.positions.set(leaf.run, log.leaves.length)
      log.leaves.push(leaf)
      return log.leaves.length - 1
    },
    size: (tenant) => of(tenant).leaves.length,
    truncate: (tenant, size) => {
      const log = of(tenant)
      for (const dropped of log.leaves.splice(size)) log.positions.delete(dropped.run)
    },
    from: (tenant, from, max) => of(tenant).leaves.slice(from, from + Math.max(0, max)),
    positionOf: (tenant, run) => of(tenant).positions.get(run),
  }
}
