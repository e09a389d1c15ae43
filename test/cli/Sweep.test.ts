/**
 * `agentplane sweep` as an operator runs it, a real process (`node --import tsx`), on each
 * backend: a quiet tick prints its report and exits 0; a tick that dead-letters an event exits 2
 * and says so in the report; `--lock-timeout` reaches PostgreSQL (a tick under a held table lock
 * ends through the flag's timeout, where the environment's ten minutes would hang it).
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { Effect, type Layer } from "effect"
import pg from "pg"
import { afterAll, describe, inject, it } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { InboundEvent } from "../../src/domain/Event.js"
import * as Tenant from "../../src/domain/Tenant.js"
import * as Time from "../../src/domain/Time.js"
import type { Backend } from "../../src/errors/StoreError.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { EventStore } from "../../src/services/EventStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { assert } from "../support/Assert.js"

const files: Array<string> = []
afterAll(() => {
  for (const file of files)
    for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true })
})

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI to its end, without the developer's AGENTPLANE_* variables. */
const cli = (args: ReadonlyArray<string>, extra: Record<string, string> = {}): Promise<Finished> =>
  new Promise((resolve) => {
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_"))),
      ...extra,
    }
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/Main.ts", ...args], { env })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    child.once("exit", (code) => resolve({ code, stdout, stderr }))
  })

interface Store {
  readonly name: string
  /** The `--store` value and the same store as a layer, for seeding. */
  readonly make: () => Promise<{
    readonly store: string
    readonly layer: Layer.Layer<Stores.Stores, Backend>
    readonly drop: () => Promise<void>
  }>
}

const sqlite: Store = {
  name: "sqlite",
  make: async () => {
    const file = join(inject("scratchDir"), `sweep-${randomUUID()}.db`)
    files.push(file)
    return { store: file, layer: SqliteBackend.layer({ filename: file }), drop: async () => {} }
  },
}

const postgres: Store = {
  name: "postgres",
  make: async () => {
    const name = `agentplane_sweep_${randomUUID().replaceAll("-", "")}`
    const admin = new pg.Client({ connectionString: inject("pgUrl") })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(inject("pgUrl"))
    url.pathname = `/${name}`
    return {
      store: url.toString(),
      layer: PgBackend.layer({ url: url.toString() }),
      drop: async () => {
        const again = new pg.Client({ connectionString: inject("pgUrl") })
        await again.connect()
        await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await again.end()
      },
    }
  },
}

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
        assert.deepStrictEqual([other.code, report(other.stdout).deadLettered], [0, 0])
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

/** `serve` started through `node --import tsx`; `address` resolves once it announces where it listens. */
const serve = (args: ReadonlyArray<string>) => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_")))
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/Main.ts", "serve", ...args], { env })
  let stdout = ""
  let stderr = ""
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const address = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      const match = /agentplane serving (http:\/\/\S+)/.exec(stdout)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    void exit.then((code) => reject(new Error(`serve exited ${code}: ${stderr}`)))
  })
  return { child, exit, address, stdout: () => stdout }
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
        assert.strictEqual(await server.exit, 0)
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
      assert.strictEqual((await cli(["migrate", "--store", store])).code, 0)
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
