/**
 * Migration `0010_view_reads`, PostgreSQL dialect (the other set mirrors its index): the records a
 * run's view reads its policy decisions from (`viewRecords`), so `GET /runs/{run}` walks those and
 * not the run's every record: refusals, releases, approvals' Notes and the worklist's answers
 * (an `EffectDone` whose stored body holds the worklist's `source`, which sealing leaves in the
 * clear). The predicate is written as the read writes it (`ViewRecords.DECISION_ROWS`).
 */
export const statements: ReadonlyArray<string> = [
  `CREATE INDEX IF NOT EXISTS journal_decisions
    ON journal (tenant, run_id, seq)
    WHERE (kind IN ('PolicyDenied', 'Released') OR (kind = 'Note' AND effect_key IS NOT NULL) OR (kind = 'EffectDone' AND position('"source":"agentplane://worklist"'::bytea IN raw) > 0))`,
]
