/**
 * One syntax for every timeout (issue 33): whole seconds in the flag and its environment
 * variable alike, and a value that is not one is refused naming the variable; `--lease-ttl` below
 * the 2 s that holds is refused naming the flag. Real processes, as an operator runs them.
 */
import { join } from "node:path"
import { afterAll, describe, it } from "vitest"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, scratchFile } from "../support/Cli.js"

afterAll(cleanUp)

describe("agentplane settings", () => {
  it("a timeout variable takes whole seconds like its flag; anything else is refused naming it", {
    timeout: 120_000,
  }, async () => {
    const store = scratchFile("settings.db")
    const seconds = await cli(["migrate", "--store", store], { AGENTPLANE_SQLITE_BUSY_TIMEOUT: "30" })
    assert.strictEqual(seconds.code, 0, seconds.stderr)
    for (const value of ["30 seconds", "0", "2.5"]) {
      const refused = await cli(["migrate", "--store", store], { AGENTPLANE_SQLITE_BUSY_TIMEOUT: value })
      assert.strictEqual(refused.code, 1, refused.stderr)
      assert.match(refused.stderr, /AGENTPLANE_SQLITE_BUSY_TIMEOUT=.*whole number of seconds/)
    }
    const pg = await cli(["migrate", "--store", "postgres://127.0.0.1:1/none"], {
      AGENTPLANE_PG_LOCK_TIMEOUT: "5s",
    })
    assert.strictEqual(pg.code, 1, pg.stderr)
    assert.match(pg.stderr, /AGENTPLANE_PG_LOCK_TIMEOUT="5s" is not a timeout/)
  })

  it("--lease-ttl below 2 is refused naming the flag, before anything opens", { timeout: 120_000 }, async () => {
    const store = scratchFile("lease.db")
    const args = (ttl: string) => [
      "serve",
      "--store",
      store,
      "--addr",
      "127.0.0.1:0",
      "--tokens",
      join("examples", "demo-tokens.json"),
      "--policy",
      join("examples", "demo-policy"),
      "--lease-ttl",
      ttl,
    ]
    const short = await cli(args("1"))
    assert.strictEqual(short.code, 1, short.stderr)
    assert.match(short.stderr, /--lease-ttl \(AGENTPLANE_LEASE_TTL\) 1: a lease lasts at least 2/)
  })
})
