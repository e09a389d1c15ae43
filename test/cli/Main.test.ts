/**
 * The `agentplane` command as an operator runs it: a real process through tsx. `serve` answers on
 * an ephemeral port, stops on SIGTERM with exit 0 and leaves the SQLite file closed; it refuses
 * to start without a credential table or a policy, saying which; the other verbs do their one
 * thing.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, describe, inject, it } from "vitest"
import * as Store from "../../src/cli/Store.js"
import * as Credentials from "../../src/http/Credentials.js"
import { assert } from "../support/Assert.js"

const TSX = join("node_modules", ".bin", "tsx")
const TOKENS = join("examples", "demo-tokens.json")
const POLICY = join("examples", "demo-policy.json")
const REVIEWER = "demo-reviewer-token"
/** Generous: the CLI starts through tsx on a shared, busy machine. */
const STARTUP_MS = 90_000

const files: Array<string> = []
afterAll(() => {
  for (const file of files)
    for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true })
})

const tempDb = (): string => {
  const file = join(inject("scratchDir"), `cli-${randomUUID()}.db`)
  files.push(file)
  return file
}

/** The environment without any AGENTPLANE_* variable of the developer's shell, plus `extra`. */
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_"))),
  ...extra,
})

interface Run {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exit: Promise<number | null>
}

const run = (args: ReadonlyArray<string>, extra: Record<string, string> = {}, stdin?: string): Run => {
  const child = spawn(TSX, ["src/cli/Main.ts", ...args], { env: env(extra), stdio: ["pipe", "pipe", "pipe"] })
  let out = ""
  let err = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8")
  })
  child.stdin?.end(stdin ?? "")
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, stdout: () => out, stderr: () => err, exit }
}

/** The address `serve` announces once it listens; fails if it exits or stays silent first. */
const listening = async (server: Run): Promise<string> => {
  const deadline = Date.now() + STARTUP_MS
  let exited = false
  void server.exit.then(() => {
    exited = true
  })
  while (Date.now() < deadline) {
    const match = /agentplane serving (http:\/\/[^\s]+)/.exec(server.stdout())
    if (match?.[1] !== undefined) return match[1]
    if (exited) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  server.child.kill("SIGKILL")
  return assert.fail(`serve did not announce an address\nstdout: ${server.stdout()}\nstderr: ${server.stderr()}`)
}

/** Sends SIGTERM and returns the exit code; a process still there after 30 s is a hang, not a slow stop. */
const terminate = async (server: Run): Promise<{ code: number | null }> => {
  server.child.kill("SIGTERM")
  const code = await Promise.race([server.exit, new Promise<"hung">((r) => setTimeout(() => r("hung"), 30_000))])
  if (code === "hung") {
    server.child.kill("SIGKILL")
    return assert.fail("serve did not exit within 30 s of SIGTERM")
  }
  return { code }
}

const get = (url: string, token?: string) =>
  fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })

/** The file is closed: nothing holds its write lock, and the WAL was checkpointed away on close. */
const assertReleased = (file: string) => {
  assert.isFalse(existsSync(`${file}-wal`), "a -wal file was left behind: the database was not closed")
  const db = new Database(file, { timeout: 0 })
  try {
    db.exec("BEGIN IMMEDIATE")
    db.exec("ROLLBACK")
    const applied = db.prepare("SELECT count(*) AS n FROM agentplane_migrations").get() as { n: number }
    assert.isTrue(applied.n > 0, "migrations were applied on start")
  } finally {
    db.close()
  }
}

// Each test starts one to three processes through tsx; on a busy machine that is slow.
describe("agentplane serve", { timeout: 180_000 }, () => {
  it("serves /healthz and the API on SQLite, then exits 0 on SIGTERM leaving the file closed", async () => {
    const store = tempDb()
    const server = run(["serve", "--addr", "127.0.0.1:0", "--store", store, "--tokens", TOKENS, "--policy", POLICY])
    const base = await listening(server)
    const health = await get(`${base}/healthz`)
    assert.strictEqual(health.status, 200)
    assert.deepStrictEqual(await health.json(), { status: "ok" })
    assert.strictEqual((await get(`${base}/tasks`)).status, 401)
    assert.strictEqual((await get(`${base}/tasks`, REVIEWER)).status, 200)
    const { code } = await terminate(server)
    assert.strictEqual(code, 0, server.stderr())
    assert.match(server.stdout(), /agentplane stopped/)
    assertReleased(store)
  })

  it("reads every setting from AGENTPLANE_* variables, the tables as inline JSON", async () => {
    const store = tempDb()
    const tokens = JSON.stringify([
      { digest: Credentials.digest("env-token"), tenant: "envtenant", actor: "eve", roles: ["reviewer"] },
    ])
    const policy = JSON.stringify({ allow: [{ action: "api:task.*", roles: ["reviewer"] }] })
    const server = run(["serve"], {
      AGENTPLANE_ADDR: "127.0.0.1:0",
      AGENTPLANE_STORE: store,
      AGENTPLANE_TOKENS_JSON: tokens,
      AGENTPLANE_POLICY_JSON: policy,
    })
    const base = await listening(server)
    assert.strictEqual((await get(`${base}/tasks`, "env-token")).status, 200)
    assert.strictEqual((await get(`${base}/tasks`, REVIEWER)).status, 401, "the demo table is not in force")
    assert.strictEqual((await get(`${base}/cases`, "env-token")).status, 403, "the policy is in force")
    assert.strictEqual((await terminate(server)).code, 0, server.stderr())
    assertReleased(store)
  })

  it("serves on PostgreSQL given --database-url, and closes the pool on SIGTERM", async () => {
    const server = run([
      "serve",
      "--addr",
      "127.0.0.1:0",
      "--database-url",
      inject("pgUrl"),
      "--tokens",
      TOKENS,
      "--policy",
      POLICY,
    ])
    const base = await listening(server)
    assert.strictEqual((await get(`${base}/tasks`, REVIEWER)).status, 200)
    assert.strictEqual((await terminate(server)).code, 0, server.stderr())
  })

  it("refuses to start without a policy or a credential table, saying which, and touches no store", async () => {
    const store = tempDb()
    const noPolicy = run(["serve", "--store", store, "--tokens", TOKENS])
    assert.strictEqual(await noPolicy.exit, 1)
    assert.match(noPolicy.stderr(), /serve needs a policy .*--policy <file>/)
    const noTokens = run(["serve", "--store", store, "--policy", POLICY])
    assert.strictEqual(await noTokens.exit, 1)
    assert.match(noTokens.stderr(), /serve needs a credential table: --tokens <file>/)
    assert.isFalse(existsSync(store), "no store was opened")
  })

  it("refuses a malformed credential table, naming the entry, before opening the store", async () => {
    const store = tempDb()
    const tokens = JSON.stringify([
      { digest: Credentials.digest("a"), tenant: "acme", actor: "alice", roles: [] },
      { digest: Credentials.digest("b"), tenant: "acme/evil", actor: "mallory", roles: [] },
    ])
    const refused = run(["serve", "--store", store, "--policy", POLICY], { AGENTPLANE_TOKENS_JSON: tokens })
    assert.strictEqual(await refused.exit, 1)
    assert.match(
      refused.stderr(),
      /credential table AGENTPLANE_TOKENS_JSON: entry 1 \(actor "mallory"\): a tenant name must not contain "\/"/,
    )
    assert.isFalse(existsSync(store))
  })
})

describe("--store", () => {
  it("a postgres:// or postgresql:// URL is PostgreSQL, anything else a SQLite file", () => {
    assert.isTrue(Store.isPostgres("postgres://u@h/db"))
    assert.isTrue(Store.isPostgres("PostgreSQL://u@h/db"))
    assert.isFalse(Store.isPostgres("./agentplane.db"))
    assert.isFalse(Store.isPostgres("postgres.db"))
  })

  it("is shown with a URL's password masked", () => {
    assert.strictEqual(Store.show("postgres://app:s3cret@db:5432/plane"), "postgres://app:***@db:5432/plane")
    assert.strictEqual(Store.show("postgres://app@db/plane"), "postgres://app@db/plane")
    assert.strictEqual(Store.show("./agentplane.db"), "./agentplane.db")
  })
})

describe("agentplane migrate, token-digest, seed-demo", { timeout: 180_000 }, () => {
  it("migrate applies the migrations and exits 0", async () => {
    const store = tempDb()
    const migrate = run(["migrate", "--store", store])
    assert.strictEqual(await migrate.exit, 0, migrate.stderr())
    assert.match(migrate.stdout(), /migrations applied to /)
    assertReleased(store)
  })

  it("token-digest prints the digest of the token on standard input, and refuses none", async () => {
    const digest = run(["token-digest"], {}, "demo-reviewer-token\n")
    assert.strictEqual(await digest.exit, 0, digest.stderr())
    assert.strictEqual(digest.stdout(), `${Credentials.digest("demo-reviewer-token")}\n`)
    const empty = run(["token-digest"], {}, "")
    assert.strictEqual(await empty.exit, 1)
    assert.match(empty.stderr(), /no token on standard input/)
  })

  it("seed-demo opens the demo case and task and prints them as shell assignments", async () => {
    const store = tempDb()
    const seed = run(["seed-demo", "--store", store])
    assert.strictEqual(await seed.exit, 0, seed.stderr())
    assert.match(seed.stdout(), /^CASE=case_[0-9A-HJKMNP-TV-Z]{26}\nTASK=task_[0-9a-f]{64}\n$/)
    const db = new Database(store, { readonly: true })
    try {
      const row = db.prepare("SELECT count(*) AS n FROM tasks").get() as { n: number }
      assert.strictEqual(row.n, 1)
    } finally {
      db.close()
    }
  })
})
