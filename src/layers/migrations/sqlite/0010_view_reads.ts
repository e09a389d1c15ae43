/**
 * Migration `0010_view_reads`, SQLite dialect (see the PostgreSQL set for why): the index of the
 * records a run's view reads its policy decisions from. The predicate is written as the read
 * writes it (`ViewRecords.DECISION_ROWS`): SQLite's planner matches a partial index's terms
 * literally.
 */
export const statements: ReadonlyArray<string> = [
  `CREATE INDEX IF NOT EXISTS journal_decisions
    ON journal (tenant, run_id, seq)
    WHERE (kind IN ('PolicyDenied', 'Released') OR (kind = 'Note' AND effect_key IS NOT NULL) OR (kind = 'EffectDone' AND instr(raw, CAST('"source":"agentplane://worklist"' AS BLOB)) > 0))`,
]
