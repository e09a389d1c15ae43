/**
 * Migration `0003_run_positions`, SQLite dialect; mirrors `../pg/0003_run_positions.ts`.
 *
 * `cases.runs_next` is the next run position a case hands out, so a detached last run's
 * position is never handed out again (§5.1). SQLite already compares deadline names in byte
 * order (BINARY collation), so pg's collation change has no counterpart here.
 *
 * SQLite has no `ADD COLUMN IF NOT EXISTS`; the Migrator records this set in the same
 * transaction, so it runs once.
 */
export const statements: ReadonlyArray<string> = [
  `ALTER TABLE cases ADD COLUMN runs_next INTEGER NOT NULL DEFAULT 0 CHECK (runs_next >= 0)`,
  `UPDATE cases SET runs_next = (
     SELECT MAX(seq) + 1 FROM case_runs r WHERE r.tenant = cases.tenant AND r.case_id = cases.case_id)
    WHERE EXISTS (SELECT 1 FROM case_runs r WHERE r.tenant = cases.tenant AND r.case_id = cases.case_id)`,
]
