/**
 * How a seal takes its log position (§6.5): dense from 0 per tenant, no gaps, tenants apart.
 *
 * Decision (Tessera's sequencing): each tenant has a counter row, `log_sequence(tenant, size)`,
 * and the seal increments it inside its own statement (pg: a CTE of the seal's statement;
 * sqlite, whose WITH cannot write: a statement just before the seal's, in the same transaction
 * under the file's write lock), taking `size − 1` as its position. So the seal and its position
 * commit together or not at all: a rolled-back seal gives its number back, and no number is
 * taken by a seal that was not written. On pg the upsert's row lock is held to the commit, so two
 * seals of one tenant number one after the other, and a seal at p + 1 exists only once the seal
 * at p committed: a reader that sees position p + 1 sees every position below it (integration
 * relies on this). Seals of different tenants never meet. The price is that one tenant's seals
 * serialise on the row for the time between the seal's statement and its commit; a shared send
 * (`SharedCommit`) that deadlocks on two tenants' rows is refused and its members go alone.
 *
 * The global `nextval('run_log_position')` this replaces had gaps (a rolled-back nextval is
 * lost) and numbered all tenants as one.
 */

/**
 * What follows `INSERT INTO log_sequence (tenant, size) VALUES (<tenant>, 1)` (or `SELECT <tenant>,
 * 1 FROM <guard>`, to take a position only when the guard passed): the first seal of a tenant
 * inserts its row at size 1, every later one adds 1; either way the position taken is the size
 * before, returned as `position`.
 */
export const NEXT = "ON CONFLICT (tenant) DO UPDATE SET size = log_sequence.size + 1 RETURNING size - 1 AS position"
