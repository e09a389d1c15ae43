/**
 * Migration `0007_fresh_timers`, PostgreSQL dialect (the other set mirrors its indexes).
 * `claimDue` walked `timers_pending` in fire order and stepped over every held claim at the
 * queue head, each a heap visit to test `claimable_at`: the bench's growth table (1% of the
 * timers claimed and not yet disarmed, as its fixture keeps at each size) read 3.2 ms at 1,000
 * timers and 5.6 ms at 1,000,000; SQLite's same walk grew 3.6×. Every timer is now in exactly one
 * of two partial indexes, so the claim reads only rows it can take:
 *
 * - `timers_fresh`: never claimed, in the claim's order. An unclaimed timer's `claimable_at` is
 *   its `fire_at` (arm writes both), so `fire_at <= now` there is exactly "takeable"; the walk
 *   stops after `n`.
 * - `timers_claimed`: claimed at least once, by when the claim lapses. The range
 *   `claimable_at <= now` holds only lapsed claims, which the claim sorts: as many as a dead
 *   sweeper left, not the held ones.
 *
 * They replace `timers_due` (tenant, claimable_at), whose range held the fresh due rows too, so a
 * claim through it would sort the whole backlog. `timers_pending` stays: `pending` lists every
 * timer, held or not. Each predicate is written as the claim writes it, so SQLite's planner,
 * which matches partial index terms literally, can use it too.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE INDEX IF NOT EXISTS timers_fresh
    ON timers (tenant, fire_at, run_id, effect_key)
    WHERE claimed_at IS NULL`,
  `CREATE INDEX IF NOT EXISTS timers_claimed
    ON timers (tenant, claimable_at)
    WHERE claimed_at IS NOT NULL`,
  `DROP INDEX IF EXISTS timers_due`,
]
