/**
 * `ViewRecords`' two copies of what lives elsewhere: the index's predicate in migration
 * `0010_view_reads`, which the read must repeat word for word for SQLite's planner to use the
 * index, and the worklist's source, which the layers cannot import from the runtime.
 */
import { describe, expect, it } from "vitest"
import { DECISION_ROWS, WORKLIST_SOURCE } from "../../src/layers/internal/ViewRecords.js"
import * as Pg from "../../src/layers/migrations/pg/0010_view_reads.js"
import * as Sqlite from "../../src/layers/migrations/sqlite/0010_view_reads.js"
import * as Worklist from "../../src/runtime/Worklist.js"

const flat = (text: string) => text.replace(/\s+/g, " ")

describe("ViewRecords", () => {
  it("reads with the predicate the index is built on, in each dialect", () => {
    expect(Pg.statements.map(flat)).toEqual([
      `CREATE INDEX IF NOT EXISTS journal_decisions ON journal (tenant, run_id, seq) WHERE ${DECISION_ROWS("pg")}`,
    ])
    expect(Sqlite.statements.map(flat)).toEqual([
      `CREATE INDEX IF NOT EXISTS journal_decisions ON journal (tenant, run_id, seq) WHERE ${DECISION_ROWS("sqlite")}`,
    ])
  })

  it("finds the worklist's answers by the runtime's source", () => {
    expect(WORKLIST_SOURCE).toBe(Worklist.WORKLIST_SOURCE)
  })
})
