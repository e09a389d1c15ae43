import pg from "pg"
import { describe, expect, inject, it } from "vitest"

// Checks the harness in test/support/globalSetup.ts: every run gets its own
// fresh PostgreSQL database, and it is reachable.
describe("test harness", () => {
  it("provides a fresh agentplane_test_ database", () => {
    const url = new URL(inject("pgUrl"))
    expect(decodeURIComponent(url.pathname.slice(1))).toMatch(/^agentplane_test_\d+_[0-9a-f]+$/)
    expect(["DATABASE_URL", "local", "embedded"]).toContain(inject("pgSource"))
  })

  it("connects to that database and runs SELECT 1", async () => {
    const url = inject("pgUrl")
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
    await client.connect()
    try {
      const one = await client.query<{ one: number }>("SELECT 1 AS one")
      expect(one.rows).toEqual([{ one: 1 }])
      const db = await client.query<{ db: string }>("SELECT current_database() AS db")
      expect(db.rows[0]?.db).toBe(decodeURIComponent(new URL(url).pathname.slice(1)))
    } finally {
      await client.end()
    }
  })
})
