/**
 * Migration `0008_serial_reads`, PostgreSQL dialect (SQLite has no parallel query: its set holds
 * this id with no statements). Every store table is read by one backend, never with parallel
 * workers.
 *
 * Every store read names one tenant and is bounded, but the planner prices a tenant's predicate
 * from the whole table. When another tenant holds many rows the predicate matches, a small
 * tenant's read looks large, and the planner splits it over a Gather of workers whose start costs
 * more than the work. Found on `census` by the bench's growth table: other tenants' open cases
 * made the planner expect 183,622 open for a tenant with 500, and a count that takes 0.34 ms on
 * one backend took 8–10 ms with two workers (EXPLAIN ANALYZE of the census on 1.2M cases, 200k
 * of them another tenant's open ones). Extended statistics on (tenant, status) left the estimate
 * where it was.
 *
 * `parallel_workers = 0` on the table is the narrowest switch that holds in every session: a
 * `SET LOCAL` in the verb would outlive the call inside a caller's transaction, and a setting on
 * the connection would reach an application's own queries on the shared client. Reads that
 * would gain from workers (scans of a whole table) are not store reads. A table added later
 * takes the same setting; `test/layers/SerialReads.test.ts` checks every table of the schema.
 */
export const TABLES: ReadonlyArray<string> = [
  "cases",
  "case_correlation",
  "case_runs",
  "case_deadlines",
  "case_blobs",
  "blobs",
  "inbound_events",
  "inbound_correlation",
  "subscriptions",
  "timers",
  "tasks",
  "batches",
  "batch_items",
  "quota_running",
  "quota_spent",
  "quota_halted",
  "journal",
  "run_lease",
  "run_seal",
  "run_outcome",
  "run_activity",
  "run_admission",
  "run_cancel",
  "key_ring",
]

export const statements: ReadonlyArray<string> = TABLES.map(
  (table) => `ALTER TABLE ${table} SET (parallel_workers = 0)`,
)
