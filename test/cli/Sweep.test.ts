/**
 * `agentplane sweep` as an operator runs it, a real process (`node --import tsx`), on each
 * backend: a quiet tick prints its report and exits 0; a tick that dead-letters an event exits 2
 * and says so in the report; `--lock-timeout` reaches PostgreSQL (a tick under a held table lock
 * ends through the flag's timeout, where the environment's ten minutes would hang it).
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { Effect, type Layer } from "effect"
import pg from "pg"
import { afterAll, describe, it } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { InboundEvent } from "../../src/domain/Event.js"
import * as Tenant from "../../src/domain/Tenant.js"
import * as Time from "../../src/domain/Time.js"
import type { Backend } from "../../src/errors/StoreError.js"
import { EventStore } from "../../src/services/EventStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, postgres, serve, sqlite } from "../support/Cli.js"

afterAll(cleanUp)

/** An event buffered long ago that no run claims: past any grace, the sweep dead-letters it. */
const seedStaleEvent = (layer: Layer.Layer<Stores.Stores, Backend>, tenant: Tenant.TenantId) =>
  Effect.runPromise(
    Effect.flatMap(EventStore, (events) =>
      events.buffer(
        new InboundEvent({
          source: "psp",
          id: `stale-${randomUUID()}`,
          kind: "payment.captured",
          correlation: [CorrelationKey.make("order", "o-1")],
          payload: null,
        }),
        Time.Timestamp.make(1_000),
      ),
    ).pipe(Effect.provideService(Tenant.Tenant, tenant), Effect.provide(layer)),
  )

const report = (out: string) =>
  JSON.parse(out) as {
    deadLettered: number
    record: string | null
    censusUnavailable: boolean
    census: { openCases: number; oldestCaseAgeSecs: number | null }
  }

for (const backend of [sqlite, postgres]) {
  describe(`agentplane sweep (${backend.name})`, () => {
    it("a quiet tick prints the report as JSON and exits 0; a dead letter makes it exit 2", {
      timeout: 180_000,
    }, async () => {
      const { store, layer, drop } = await backend.make()
      try {
        const tenant = `t-${randomUUID().slice(0, 8)}`
        const quiet = await cli(["sweep", "--store", store, "--tenant", tenant])
        assert.strictEqual(quiet.code, 0, quiet.stderr)
        const first = report(quiet.stdout)
        assert.deepStrictEqual(
          [
            first.deadLettered,
            first.record,
            first.censusUnavailable,
            first.census.openCases,
            first.census.oldestCaseAgeSecs,
          ],
          [0, null, false, 0, null],
        )
        await seedStaleEvent(layer, Tenant.TenantId.make(tenant))
        // Another tenant's sweep does not touch it.
        const other = await cli(["sweep", "--store", store, "--tenant", `${tenant}-x`, "--event-grace", "0"])
        assert.deepStrictEqual([other.code, report(other.stdout).deadLettered], [0, 0], other.stderr)
        const attention = await cli(["sweep", "--store", store, "--tenant", tenant, "--event-grace", "0"])
        assert.strictEqual(attention.code, 2, attention.stderr)
        const second = report(attention.stdout)
        assert.strictEqual(second.deadLettered, 1)
        // Every field of §7.10's SweepReport, absences as null.
        assert.deepStrictEqual(Object.keys(second).sort(), [
          "breached",
          "census",
          "censusUnavailable",
          "deadLettered",
          "eventsRedelivered",
          "evidenceLost",
          "record",
          "recoveryFailures",
          "runsRecovered",
          "saturated",
          "tasksEscalated",
          "tasksExpired",
          "timersFired",
          "wakeFailures",
          "warned",
        ])
      } finally {
        await drop()
      }
    })
  })
}

for (const backend of [sqlite, postgres]) {
  describe(`agentplane serve --sweep-every (${backend.name})`, () => {
    it("sweeps the credential table's tenants in the background, and stops with the server", {
      timeout: 180_000,
    }, async () => {
      const { store, layer, drop } = await backend.make()
      try {
        // The demo credential table's tenant.
        await seedStaleEvent(layer, Tenant.DEFAULT)
        const server = serve([
          "--store",
          store,
          "--addr",
          "127.0.0.1:0",
          "--tokens",
          join("examples", "demo-tokens.json"),
          "--policy",
          join("examples", "demo-policy.json"),
          "--sweep-every",
          "1",
          "--event-grace",
          "0",
        ])
        try {
          const base = await server.address
          assert.match(server.stdout(), /sweeping every 1s/)
          // The first tick dead-letters the stale event; poll the operator's view of it.
          let letters: Array<unknown> = []
          while (letters.length === 0) {
            const answer = await fetch(`${base}/dead-letters`, {
              headers: { authorization: "Bearer demo-admin-token" },
            })
            letters = ((await answer.json()) as { readonly items: Array<unknown> }).items
            if (letters.length === 0) await new Promise((resolve) => setTimeout(resolve, 200))
          }
          assert.strictEqual(letters.length, 1)
        } finally {
          server.child.kill("SIGTERM")
        }
        const ended = await server.done
        assert.strictEqual(ended.code, 0, ended.stderr)
      } finally {
        await drop()
      }
    })
  })
}

describe("agentplane sweep (postgres timeouts)", () => {
  it("--lock-timeout reaches the backend: under a held table lock the tick ends through it", {
    timeout: 180_000,
  }, async () => {
    const { store, drop } = await postgres.make()
    try {
      // Migrated first, so the lock below finds the table.
      const migrated = await cli(["migrate", "--store", store])
      assert.strictEqual(migrated.code, 0, migrated.stderr)
      const holder = new pg.Client({ connectionString: store })
      await holder.connect()
      try {
        await holder.query("BEGIN")
        await holder.query("LOCK TABLE cases IN ACCESS EXCLUSIVE MODE")
        // Were the flag lost, the environment's ten minutes would apply and the tick would hang
        // past the test's timeout.
        const swept = await cli(["sweep", "--store", store, "--lock-timeout", "1"], {
          AGENTPLANE_PG_LOCK_TIMEOUT: "10 minutes",
        })
        assert.strictEqual(swept.code, 2, swept.stderr)
        assert.isTrue(report(swept.stdout).censusUnavailable)
      } finally {
        await holder.query("ROLLBACK")
        await holder.end()
      }
    } finally {
      await drop()
    }
  })
})
