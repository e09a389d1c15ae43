/**
 * Migration `0003_run_positions`, PostgreSQL dialect.
 *
 * `cases.runs_next` is the next run position a case hands out. MAX + 1 over `case_runs` alone
 * gave the position of a detached last run to the next attach; §5.1 says a position is never
 * reused, so the high-water mark is kept with the case.
 *
 * `case_deadlines.name` compares in byte order, as SQLite compares it: `deadlines`, `due` and
 * `breached` break ties by name, and on a server whose default collation is a locale's the order
 * would depend on the machine.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE cases ADD COLUMN IF NOT EXISTS runs_next BIGINT NOT NULL DEFAULT 0 CHECK (runs_next >= 0)`,
  `UPDATE cases SET runs_next = r.next
     FROM (SELECT tenant, case_id, MAX(seq) + 1 AS next FROM case_runs GROUP BY tenant, case_id) r
    WHERE cases.tenant = r.tenant AND cases.case_id = r.case_id AND cases.runs_next < r.next`,
  `ALTER TABLE case_deadlines ALTER COLUMN name TYPE TEXT COLLATE "C"`,
]
