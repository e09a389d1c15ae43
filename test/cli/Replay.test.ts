/**
 * `agentplane replay` as a real process (§7.13): runs recorded by one build, exported, and
 * replayed against that build (exit 0), against a build that changed an effect's arguments (exit 2,
 * the run and the point named), from a damaged export (exit 3), and with nothing to check (exit 1);
 * and from a store read in place (`--store` without `--from`), on SQLite and PostgreSQL, which the
 * replay leaves as it found it and refuses when its schema is not this build's.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import Sqlite from "better-sqlite3"
import { Chunk, Effect, type Layer, Stream } from "effect"
import pg from "pg"
import { afterAll, describe, it } from "vitest"
import * as Export from "../../src/archive/Export.js"
import * as Run from "../../src/domain/Run.js"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import type * as StoreError from "../../src/errors/StoreError.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import type * as Stores from "../../src/services/Stores.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Cli from "../archive/Cli.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { orders } from "./replay/Orders.js"

afterAll(Cli.cleanUp)

const RECORDED = "test/cli/replay/Recorded.ts"
const CHANGED = "test/cli/replay/Changed.ts"

/** Three runs of the recorded build, exported. */
const def = orders(false)
const recorded = Effect.gen(function* () {
  const runs: Array<string> = []
  for (const n of [1, 2, 3]) {
    const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n }, "test")))
    runs.push(result.run)
  }
  const lines = Chunk.toReadonlyArray(yield* Stream.runCollect(Export.lines()))
  return { lines, runs: runs.sort() }
}).pipe(Effect.provide(TestRuntime.layer([def])), Effect.provideService(Tenant, Backend.freshTenant()))

const file = (name: string, lines: ReadonlyArray<string>) => {
  const path = Cli.scratchFile(name)
  writeFileSync(path, `${lines.join("\n")}\n`)
  return path
}

describe("replay", () => {
  it("exits 0, 2, 3 or 1 as the runs replay, diverge, are damaged or nothing is checked", {
    timeout: 180_000,
  }, async () => {
    const { lines, runs } = await Effect.runPromise(recorded)
    const sound = file("replay.jsonl", lines)
    // The last run's fourth record changed to another phase: it still decodes, only its chain tells.
    const at = lines.findIndex((l) => l.includes(`"run":"${runs[2]}"`) && l.includes('"seq":4'))
    const record = JSON.parse(lines[at] ?? "") as { raw: string }
    const body = Buffer.from(record.raw, "base64")
      .toString("utf8")
      .replace('"phase":"forward"', '"phase":"compensating"')
    const damaged = file(
      "damaged.jsonl",
      lines.map((l, i) => (i === at ? l.replace(record.raw, Buffer.from(body).toString("base64")) : l)),
    )
    const report = Cli.scratchFile("report.jsonl")
    const [ok, changed, broken, noRuns, noneMatch, badSince] = await Promise.all([
      Cli.cli(["replay", "--from", sound, "--runs", RECORDED, "--report", report]),
      Cli.cli(["replay", "--runs", CHANGED], { AGENTPLANE_FROM: sound }),
      Cli.cli(["replay", "--from", damaged, "--runs", RECORDED, "--quiet"]),
      Cli.cli(["replay", "--from", sound]),
      Cli.cli(["replay", "--from", sound, "--runs", RECORDED, "--definition", "orders.refund"]),
      Cli.cli(["replay", "--from", sound, "--runs", RECORDED, "--since", "last week"]),
    ])

    assert.strictEqual(ok.code, 0, ok.stderr)
    assert.deepStrictEqual(JSON.parse(ok.stdout), {
      checked: 3,
      ok: 3,
      ok_open: 0,
      nondeterministic: 0,
      overrun: 0,
      unknown_definition: 0,
      unreadable: 0,
      skipped: 0,
      incomplete: null,
      exit: 0,
    })
    const reported = readFileSync(report, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l))
    assert.deepStrictEqual(
      reported.slice(0, 3),
      runs.map((run) => ({ verdict: "ok", run, definition: "orders.place" })),
    )
    assert.strictEqual(reported[3].summary.ok, 3)
    assert.strictEqual(reported.length, 4)

    assert.strictEqual(changed.code, 2, changed.stderr)
    assert.strictEqual(JSON.parse(changed.stdout).nondeterministic, 3)
    for (const run of runs) {
      assert.isTrue(changed.stderr.includes(`agentplane: ${run} (orders.place): nondeterministic:`), changed.stderr)
    }
    assert.isTrue(changed.stderr.includes("expected orders.charge"), changed.stderr)

    assert.strictEqual(broken.code, 3, broken.stderr)
    assert.deepStrictEqual((({ ok, unreadable, exit }) => ({ ok, unreadable, exit }))(JSON.parse(broken.stdout)), {
      ok: 2,
      unreadable: 1,
      exit: 3,
    })
    assert.isTrue(broken.stderr.includes(`${runs[2]} unreadable at line ${at + 1}`), broken.stderr)

    assert.strictEqual(noRuns.code, 1, noRuns.stderr)
    assert.isTrue(noRuns.stderr.includes("replay needs --runs"), noRuns.stderr)
    assert.strictEqual(noneMatch.code, 1, noneMatch.stderr)
    assert.strictEqual(JSON.parse(noneMatch.stdout).skipped, 3)
    assert.strictEqual(badSince.code, 1, badSince.stderr)
    assert.isTrue(badSince.stderr.includes('--since "last week" is not an RFC 3339 instant'), badSince.stderr)
  })
})

/** Runs `n` of the recorded build into `layer`'s store under `tenant`, sorted by id. */
const seed = (stores: Layer.Layer<Stores.Stores, StoreError.Backend>, tenant: TenantId, ns: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const runs: Array<string> = []
    for (const n of ns) {
      const result = yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n }, "test")))
      runs.push(result.run)
    }
    return runs.sort()
  }).pipe(Effect.provide(TestRuntime.layer([def], { stores })), Effect.provideService(Tenant, tenant))

/** What a replay could have changed: the SQLite file's bytes, or PostgreSQL's journal and migrations. */
const fingerprint = async (store: string): Promise<string> => {
  if (!store.startsWith("postgres")) return createHash("sha256").update(readFileSync(store)).digest("hex")
  const client = new pg.Client({ connectionString: store })
  await client.connect()
  try {
    const journal = await client.query("SELECT run_id, seq, encode(hash, 'hex') AS h FROM journal ORDER BY 1, 2")
    const migrations = await client.query("SELECT migration_id FROM agentplane_migrations ORDER BY 1")
    return JSON.stringify([journal.rows, migrations.rows])
  } finally {
    await client.end()
  }
}

/** Forgets the store's newest migration, as a store left by an older build would be. */
const setBack = async (store: string): Promise<void> => {
  const statement =
    "DELETE FROM agentplane_migrations WHERE migration_id = (SELECT max(migration_id) FROM agentplane_migrations)"
  if (!store.startsWith("postgres")) {
    const db = new Sqlite(store)
    db.prepare(statement).run()
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: store })
  await client.connect()
  await client.query(statement)
  await client.end()
}

for (const backend of [Cli.sqlite, Cli.postgres]) {
  describe(`replay --store (${backend.name})`, () => {
    it("replays the tenant's runs in place, writes nothing, and refuses a store whose schema is behind", {
      timeout: 180_000,
    }, async () => {
      const made = await backend.make()
      try {
        const tenant = Backend.freshTenant()
        const other = Backend.freshTenant()
        const runs = await Effect.runPromise(seed(made.layer, tenant, [1, 2]))
        await Effect.runPromise(seed(made.layer, other, [3]))
        const before = await fingerprint(made.store)
        const report = Cli.scratchFile("store-report.jsonl")
        const [ok, changed] = await Promise.all([
          Cli.cli([
            "replay",
            "--store",
            made.store,
            "--tenant",
            tenant,
            "--runs",
            RECORDED,
            "--report",
            report,
            "--quiet",
          ]),
          Cli.cli(["replay", "--runs", CHANGED, "--quiet"], {
            AGENTPLANE_STORE: made.store,
            AGENTPLANE_TENANT: tenant,
          }),
        ])
        assert.strictEqual(ok.code, 0, ok.stderr)
        assert.deepStrictEqual((({ checked, ok, exit }) => ({ checked, ok, exit }))(JSON.parse(ok.stdout)), {
          checked: 2,
          ok: 2,
          exit: 0,
        })
        // The tenant's runs only, each by its id.
        assert.deepStrictEqual(
          readFileSync(report, "utf8")
            .trimEnd()
            .split("\n")
            .slice(0, -1)
            .map((l) => JSON.parse(l).run),
          runs,
        )
        assert.strictEqual(changed.code, 2, changed.stderr)
        assert.strictEqual(JSON.parse(changed.stdout).nondeterministic, 2)
        assert.strictEqual(await fingerprint(made.store), before)

        await setBack(made.store)
        const behind = await Cli.cli(["replay", "--store", made.store, "--tenant", tenant, "--runs", RECORDED])
        assert.strictEqual(behind.code, 1, behind.stderr)
        assert.isTrue(/is at migration \d+ and this build reads migration \d+/.test(behind.stderr), behind.stderr)
        assert.strictEqual(behind.stdout, "")
      } finally {
        await made.drop()
      }
    })
  })
}

describe("replay --store (a SQLite file that is not a store)", () => {
  it("is refused and not created", async () => {
    const missing = Cli.scratchFile("missing.db")
    const refused = await Cli.cli(["replay", "--store", missing, "--runs", RECORDED])
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.isTrue(
      refused.stderr.includes("no such file: replay reads a store in place and creates none"),
      refused.stderr,
    )
    assert.isFalse(existsSync(missing))
  })

  it("a SQLite file that is no agentplane store is refused as such", async () => {
    const foreign = Cli.scratchFile("foreign.db")
    const db = new Sqlite(foreign)
    db.exec("CREATE TABLE notes (body TEXT)")
    db.close()
    const refused = await Cli.cli(["replay", "--store", foreign, "--runs", RECORDED])
    assert.strictEqual(refused.code, 1, refused.stderr)
    assert.isTrue(refused.stderr.includes("has no agentplane schema"), refused.stderr)
  })
})
