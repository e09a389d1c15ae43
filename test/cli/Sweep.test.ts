/**
 * `agentplane sweep` as an operator runs it, a real process (`node --import tsx`), on each
 * backend: a quiet tick prints its report and exits 0; a tick that dead-letters an event exits 2
 * and says so in the report; `--lock-timeout` reaches PostgreSQL (a tick under a held table lock
 * ends through the flag's timeout, where the environment's ten minutes would hang it). From cron,
 * `sweep --runs` wakes a run due on a timer, and its standard output is the report alone in every
 * state; `--tokens` refuses a tenant the table lacks.
 */
import { randomUUID } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
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
import * as Serving from "../runtime-process/Serving.js"
import * as Workload from "../runtime-process/Workload.js"
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
          "unknownVersions",
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
          join("examples", "demo-policy"),
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
          AGENTPLANE_PG_LOCK_TIMEOUT: "600",
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

/** A run of the workload (`test/runtime-process/Workload.ts`) asleep on a timer due `secs` from now. */
const startSleepingRun = async (
  store: string,
  acts: string,
  tenancy: Serving.Tenancy,
  secs: number,
  policy: string,
) => {
  const server = serve(
    ["--store", store, "--addr", "127.0.0.1:0", "--runs", "test/runtime-process/Workload.ts", "--policy", policy],
    { AGENTPLANE_TOKENS_JSON: tenancy.tokensJson, WORKLOAD_ACTS: acts },
  )
  try {
    const base = await server.address
    const id = `sleep-${randomUUID().slice(0, 8)}`
    const until = Math.floor(Date.now() / 1000) + secs
    const body = await Serving.expectCall(201, base, "POST", "/runs", tenancy.reviewer, {
      capability: Workload.CAPABILITY,
      input: { id, wait: "timer", until, hang: false },
      admissionKey: id,
    })
    const run = body.run as string
    let view = body
    while (view.suspended === null) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      view = await Serving.expectCall(200, base, "GET", `/runs/${run}`, tenancy.reviewer)
    }
    return { run, until }
  } finally {
    server.child.kill("SIGTERM")
    const ended = await server.done
    assert.strictEqual(ended.code, 0, ended.stderr)
  }
}

/** Resolves once the wall clock is a second past `until` (whole seconds), so the timer is due. */
const dueBy = async (until: number) => {
  while (Date.now() < (until + 1) * 1000) await new Promise((resolve) => setTimeout(resolve, 200))
}

const settledRuns = (acts: string): ReadonlyArray<string> =>
  existsSync(acts)
    ? readFileSync(acts, "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Workload.ActLine)
        .filter((line) => line.act === "settle")
        .map((line) => line.run)
    : []

for (const backend of [sqlite, postgres]) {
  describe(`agentplane sweep --runs from cron (${backend.name})`, () => {
    it("with --runs a due timer wakes its run to the end; without, a wake failure whose stdout is one JSON document", {
      timeout: 240_000,
    }, async () => {
      const { store, drop } = await backend.make()
      const acts = join(tmpdir(), `sweep-acts-${randomUUID()}.jsonl`)
      // One bundle for the routes and the runs, everything permitted: this test is about waking.
      const policy = join(tmpdir(), `sweep-policy-${randomUUID()}.cedar`)
      writeFileSync(policy, "permit (principal, action, resource);\n")
      try {
        const tenancy = Serving.tenancy("invoice-bot")
        const env = { WORKLOAD_ACTS: acts }
        const sweep = (...extra: ReadonlyArray<string>) =>
          cli(["sweep", "--store", store, "--tenant", tenancy.tenant, ...extra], env)
        const asleep = await startSleepingRun(store, acts, tenancy, 2, policy)
        await dueBy(asleep.until)
        // The cron line with the module and the bundle `serve` took: the timer fires and the run finishes.
        const woken = await sweep("--runs", "test/runtime-process/Workload.ts", "--policy", policy)
        assert.strictEqual(woken.code, 0, woken.stderr)
        const fired = report(woken.stdout) as unknown as { timersFired: number; wakeFailures: number }
        assert.deepStrictEqual([fired.timersFired, fired.wakeFailures], [1, 0], woken.stdout)
        assert.deepStrictEqual(settledRuns(acts), [asleep.run])

        // Without the module the run's capability is not registered here: a wake failure, exit 2.
        const stuck = await startSleepingRun(store, acts, tenancy, 2, policy)
        await dueBy(stuck.until)
        const blind = await sweep("--policy", policy)
        assert.strictEqual(blind.code, 2, blind.stderr)
        // Exactly one JSON document on standard output, whatever was logged: `sweep | jq .` parses.
        assert.strictEqual((report(blind.stdout) as unknown as { wakeFailures: number }).wakeFailures, 1)
        assert.isTrue(blind.stdout.trimStart().startsWith("{") && blind.stdout.trimEnd().endsWith("}"))
        // The log went to standard error, as JSON lines (the test's stderr is a pipe, not a terminal).
        const logged = blind.stderr
          .trim()
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => JSON.parse(l) as { message: unknown; logLevel: string })
        assert.isTrue(
          logged.some(
            (l) => JSON.stringify(l.message).includes("agentplane.sweep.needs_attention") && l.logLevel === "WARN",
          ),
          blind.stderr,
        )
        assert.deepStrictEqual(settledRuns(acts), [asleep.run])
        // With the module but not the bundle the run was admitted under, its Resume is refused
        // (another policy would decide its next effects): a wake failure again, nothing acts.
        const unpoliced = await startSleepingRun(store, acts, tenancy, 2, policy)
        await dueBy(unpoliced.until)
        const unruled = await sweep("--runs", "test/runtime-process/Workload.ts")
        assert.strictEqual(unruled.code, 2, unruled.stderr)
        assert.strictEqual((report(unruled.stdout) as unknown as { wakeFailures: number }).wakeFailures, 1)
        assert.deepStrictEqual(settledRuns(acts), [asleep.run])
      } finally {
        rmSync(acts, { force: true })
        rmSync(policy, { force: true })
        await drop()
      }
    })
  })
}

describe("agentplane sweep --runs and --tokens", () => {
  it("a --runs module that is not there is refused before the store opens", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sweep-"))
    try {
      const store = join(dir, "plane.db")
      const missing = await cli(["sweep", "--store", store, "--runs", join(dir, "nothing.js")])
      assert.notStrictEqual(missing.code, 0)
      assert.strictEqual(missing.stdout, "")
      assert.isFalse(existsSync(store))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a --tenant the credential table lacks is refused; one it lists is swept", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "sweep-"))
    try {
      const store = join(dir, "plane.db")
      const tokens = join("examples", "demo-tokens.json")
      const refused = await cli(["sweep", "--store", store, "--tokens", tokens, "--tenant", "no-such-tenant"])
      assert.strictEqual(refused.code, 1, refused.stderr)
      assert.strictEqual(refused.stdout, "")
      assert.match(refused.stderr, /no-such-tenant.*no credential/)
      const listed = await cli(["sweep", "--store", store, "--tokens", tokens, "--tenant", "default"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.strictEqual(report(listed.stdout).deadLettered, 0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
