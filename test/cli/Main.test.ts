/**
 * The `agentplane` command as an operator runs it: a real process through tsx. `serve` answers on
 * an ephemeral port, stops on SIGTERM with exit 0 and leaves the SQLite file closed; it refuses
 * to start without a credential table or a policy, saying which; the other verbs do their one
 * thing.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { join } from "node:path"
import Database from "better-sqlite3"
import { Either } from "effect"
import pg from "pg"
import { afterAll, describe, inject, it } from "vitest"
import * as StoreFlag from "../../src/cli/StoreFlag.js"
import * as Credentials from "../../src/http/Credentials.js"
import { assert } from "../support/Assert.js"

const TSX = join("node_modules", ".bin", "tsx")
const TOKENS = join("examples", "demo-tokens.json")
const POLICY = join("examples", "demo-policy")
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

/**
 * The one line `args` are refused with: exit 1, no stack, and no announcement first. A process
 * that starts serving instead is stopped and fails the test.
 */
const refusal = async (args: ReadonlyArray<string>, extra: Record<string, string> = {}): Promise<string> => {
  const refused = run(args, extra)
  const deadline = Date.now() + STARTUP_MS
  let code: number | null | "running" = "running"
  void refused.exit.then((c) => {
    code = c
  })
  while (code === "running" && Date.now() < deadline && !/agentplane serving/.test(refused.stdout())) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (code === "running") {
    refused.child.kill("SIGKILL")
    return assert.fail(`${args.join(" ")} was not refused\nstdout: ${refused.stdout()}\nstderr: ${refused.stderr()}`)
  }
  assert.strictEqual(code, 1, `${args.join(" ")}: ${refused.stderr()}`)
  const lines = refused.stderr().trimEnd().split("\n")
  assert.strictEqual(lines.length, 1, `one line, no stack: ${refused.stderr()}`)
  assert.strictEqual(refused.stdout(), "", "nothing announced")
  return lines[0] ?? ""
}

/** A listener holding a free port on 127.0.0.1, as another server would. */
const occupy = async (): Promise<{ readonly port: number; readonly server: Server }> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve))
  const address = server.address()
  if (address === null || typeof address === "string") return assert.fail("expected a TCP address")
  return { port: address.port, server }
}

/** A new, empty PostgreSQL database on the tests' server, dropped by `drop`. */
const freshPg = async (): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const name = `agentplane_cli_${randomUUID().replaceAll("-", "")}`
  const admin = new pg.Client({ connectionString: inject("pgUrl") })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const url = new URL(inject("pgUrl"))
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await admin.end()
      }
    },
  }
}

const pgTables = async (url: string): Promise<number> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const result = await client.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")
    return (result.rows[0] as { n: number }).n
  } finally {
    await client.end()
  }
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

  it("reads every setting from AGENTPLANE_* variables, the credential table as inline JSON", async () => {
    const store = tempDb()
    const tokens = JSON.stringify([
      { digest: Credentials.digest("env-token"), tenant: "envtenant", actor: "eve", roles: ["reviewer"] },
    ])
    const policy = join(inject("scratchDir"), `policy-${randomUUID()}.cedar`)
    files.push(policy)
    writeFileSync(
      policy,
      'permit (principal in Agentplane::Role::"reviewer", action == Agentplane::Action::"api:task.list", resource);',
    )
    const server = run(["serve"], {
      AGENTPLANE_ADDR: "127.0.0.1:0",
      AGENTPLANE_STORE: store,
      AGENTPLANE_TOKENS_JSON: tokens,
      AGENTPLANE_POLICY: policy,
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
    assert.match(noPolicy.stderr(), /serve needs a policy .*--policy <bundle>/)
    const noTokens = run(["serve", "--store", store, "--policy", POLICY])
    assert.strictEqual(await noTokens.exit, 1)
    assert.match(noTokens.stderr(), /serve needs a credential table: --tokens <file>/)
    assert.isFalse(existsSync(store), "no store was opened")
  })

  it("refuses a malformed credential table, naming the entry, before opening the store", async () => {
    const store = tempDb()
    const tokens = JSON.stringify([
      { digest: Credentials.digest("a"), tenant: "acme", actor: "alice", roles: ["reviewer"] },
      { digest: Credentials.digest("b"), tenant: "acme/evil", actor: "mallory", roles: ["reviewer"] },
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

// Config that would start a server unsafe or unusable is refused before the store is opened.
describe("agentplane serve refuses", { timeout: 180_000 }, () => {
  const serve = (...args: ReadonlyArray<string>) => ["serve", "--tokens", TOKENS, "--policy", POLICY, ...args]

  it("an empty, in-memory or non-PostgreSQL URL store, naming it (flag and environment)", async () => {
    const [flagEmpty, envEmpty, memory, mysql] = await Promise.all([
      refusal(serve("--addr", "127.0.0.1:0", "--store", "")),
      refusal(serve("--addr", "127.0.0.1:0"), { AGENTPLANE_STORE: "" }),
      refusal(serve("--addr", "127.0.0.1:0", "--store", ":memory:")),
      refusal(serve("--addr", "127.0.0.1:0", "--store", "mysql://app:s3cret@db/plane")),
    ])
    assert.match(flagEmpty, /^agentplane: store "" .*: is empty, which SQLite would take as a temporary database/)
    assert.match(envEmpty, /^agentplane: store "" \(--store, AGENTPLANE_STORE .*: is empty/)
    assert.match(
      memory,
      /^agentplane: store ":memory:" .*: is SQLite's in-memory database, lost when the process exits/,
    )
    assert.match(mysql, /^agentplane: store "mysql:\/\/app:\*\*\*@db\/plane" .*: is a mysql:\/\/ URL/)
    assert.isFalse(mysql.includes("s3cret"), "the password is masked")
  })

  it("an address in use, naming it, before touching the SQLite store", async () => {
    const taken = await occupy()
    try {
      const store = tempDb()
      const line = await refusal(serve("--addr", `127.0.0.1:${taken.port}`, "--store", store))
      assert.strictEqual(
        line,
        `agentplane: cannot listen on 127.0.0.1:${taken.port}: the address is already in use (another server is listening there); stop it or give another --addr`,
      )
      assert.isFalse(existsSync(store), "no database file was created")
    } finally {
      taken.server.close()
    }
  })

  it("an address in use, naming it, before migrating the PostgreSQL store", async () => {
    const taken = await occupy()
    const db = await freshPg()
    try {
      const line = await refusal(serve("--addr", `127.0.0.1:${taken.port}`, "--store", db.url))
      assert.match(
        line,
        new RegExp(`^agentplane: cannot listen on 127\\.0\\.0\\.1:${taken.port}: the address is already in use`),
      )
      assert.strictEqual(await pgTables(db.url), 0, "no migration ran")
    } finally {
      taken.server.close()
      await db.drop()
    }
  })

  it("a key given twice in AGENTPLANE_POLICY_JSON or AGENTPLANE_TOKENS_JSON, naming where", async () => {
    const store = tempDb()
    const entry = `{"digest": "${Credentials.digest("a")}", "tenant": "acme", "actor": "alice", "roles": ["agent"]`
    const rule = (action: string) => `{"action": "${action}", "roles": ["agent"]}`
    const [policy, tokens] = await Promise.all([
      refusal(["serve", "--addr", "127.0.0.1:0", "--store", store, "--tokens", TOKENS], {
        AGENTPLANE_POLICY_JSON: `{"allow": [${rule("api:event.deliver")}], "allow": [${rule("api:admin.*")}]}`,
      }),
      refusal(["serve", "--addr", "127.0.0.1:0", "--store", store, "--policy", POLICY], {
        AGENTPLANE_TOKENS_JSON: `[${entry}, "tenant": "globex"}]`,
      }),
    ])
    assert.match(
      policy,
      /^agentplane: policy AGENTPLANE_POLICY_JSON: is not valid JSON: duplicate member name at \$\.allow /,
    )
    assert.match(
      tokens,
      /^agentplane: credential table AGENTPLANE_TOKENS_JSON: is not valid JSON: duplicate member name at \$\[0\]\.tenant /,
    )
    assert.isFalse(existsSync(store))
  })

  it("a credential whose actor holds a newline, from a file", async () => {
    const store = tempDb()
    const tokens = join(inject("scratchDir"), `tokens-${randomUUID()}.json`)
    files.push(tokens)
    writeFileSync(
      tokens,
      JSON.stringify([{ digest: Credentials.digest("a"), tenant: "acme", actor: "alice\nadmin", roles: ["reviewer"] }]),
    )
    const line = await refusal([
      "serve",
      "--addr",
      "127.0.0.1:0",
      "--store",
      store,
      "--tokens",
      tokens,
      "--policy",
      POLICY,
    ])
    assert.match(
      line,
      /^agentplane: credential table .*: entry 0 \(actor "alice\\nadmin"\): actor: must not contain control characters/,
    )
  })
})

describe("--store", () => {
  it("a postgres:// or postgresql:// URL is PostgreSQL, anything else a SQLite file", () => {
    assert.isTrue(StoreFlag.isPostgres("postgres://u@h/db"))
    assert.isTrue(StoreFlag.isPostgres("PostgreSQL://u@h/db"))
    assert.isFalse(StoreFlag.isPostgres("./agentplane.db"))
    assert.isFalse(StoreFlag.isPostgres("postgres.db"))
  })

  it("refuses what would not be a durable store, and takes a path or a postgres:// URL", () => {
    const refused = (store: string) => {
      const checked = StoreFlag.check(store)
      if (Either.isRight(checked)) return assert.fail(`accepted ${JSON.stringify(store)}`)
      assert.strictEqual(checked.left._tag, "StoreInvalid")
      return checked.left.detail
    }
    assert.match(refused(""), /^is empty/)
    assert.match(refused("   "), /^is empty/)
    assert.match(refused(":memory:"), /^is SQLite's in-memory database/)
    assert.match(refused(":MEMORY:"), /^is SQLite's in-memory database/)
    assert.match(refused(" plane.db"), /^has leading or trailing whitespace/)
    assert.match(refused("plane.db\n"), /^has leading or trailing whitespace/)
    assert.match(refused("pla\u0000ne.db"), /^contains a control character/)
    assert.match(refused("file::memory:"), /^is a file: URL/)
    assert.match(refused("file:plane.db?mode=memory"), /^is a file: URL/)
    assert.match(refused("sqlite:///var/plane.db"), /^is a sqlite: URL/)
    assert.match(refused("mysql://db/plane"), /^is a mysql:\/\/ URL/)
    assert.match(refused("redis://db"), /^is a redis:\/\/ URL/)
    assert.match(refused("postgres://[oops/plane"), /^is not a valid postgres:\/\/ URL/)
    for (const store of ["./agentplane.db", "/var/lib/plane.db", "plane", "postgres://u@h/db", "postgresql://h/db"]) {
      assert.deepStrictEqual(StoreFlag.check(store), Either.right(store))
    }
  })

  it("is shown with a URL's password masked", () => {
    assert.strictEqual(StoreFlag.show("postgres://app:s3cret@db:5432/plane"), "postgres://app:***@db:5432/plane")
    assert.strictEqual(StoreFlag.show("mysql://app:s3cret@db/plane"), "mysql://app:***@db/plane")
    assert.strictEqual(StoreFlag.show("postgres://app@db/plane"), "postgres://app@db/plane")
    assert.strictEqual(StoreFlag.show("./agentplane.db"), "./agentplane.db")
  })
})

describe("agentplane migrate, token-digest, seed-demo", { timeout: 180_000 }, () => {
  it("migrate applies the migrations, says how many as JSON, and exits 0; again, it says none", async () => {
    const store = tempDb()
    const migrate = run(["migrate", "--store", store])
    assert.strictEqual(await migrate.exit, 0, migrate.stderr())
    const first = JSON.parse(migrate.stdout()) as { kind: string; applied: number }
    assert.strictEqual(first.kind, "agentplane.migrate.done")
    assert.isTrue(first.applied > 0, migrate.stdout())
    const again = run(["migrate", "--store", store])
    assert.strictEqual(await again.exit, 0, again.stderr())
    assert.strictEqual((JSON.parse(again.stdout()) as { applied: number }).applied, 0)
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

  it("migrate and seed-demo refuse an empty, in-memory or non-PostgreSQL URL store", async () => {
    const lines = await Promise.all([
      refusal(["migrate", "--store", ""]),
      refusal(["migrate", "--store", ":memory:"]),
      refusal(["migrate"], { AGENTPLANE_DATABASE_URL: "mysql://db/plane" }),
      refusal(["seed-demo", "--store", ""]),
      refusal(["seed-demo", "--store", "sqlite://plane.db"]),
    ])
    const [empty, memory, mysql, seedEmpty, sqliteUrl] = lines
    assert.match(empty ?? "", /^agentplane: store "" .*: is empty/)
    assert.match(memory ?? "", /^agentplane: store ":memory:" .*: is SQLite's in-memory database/)
    assert.match(mysql ?? "", /^agentplane: store "mysql:\/\/db\/plane" .*: is a mysql:\/\/ URL/)
    assert.match(seedEmpty ?? "", /^agentplane: store "" .*: is empty/)
    assert.match(
      sqliteUrl ?? "",
      /^agentplane: store "sqlite:\/\/plane\.db" .*: is a sqlite: URL; give the SQLite file as a plain path/,
    )
  })

  it("refuses a timeout flag of 0 or less (on PostgreSQL 0 would mean no timeout at all)", async () => {
    const store = tempDb()
    const lines = await Promise.all([
      refusal(["migrate", "--store", store, "--lock-timeout", "0"]),
      refusal(["migrate", "--store", store, "--statement-timeout", "-5"]),
    ])
    for (const line of lines) assert.match(line, /at least 1/)
  })

  it("refuses AGENTPLANE_STORE and AGENTPLANE_DATABASE_URL naming different stores, unless --store decides", async () => {
    const store = tempDb()
    const conflict = { AGENTPLANE_STORE: store, AGENTPLANE_DATABASE_URL: "postgres://app:s3cret@db/plane" }
    const line = await refusal(["migrate"], conflict)
    assert.strictEqual(
      line,
      `(Invalid data at AGENTPLANE_STORE: "${store} differs from AGENTPLANE_DATABASE_URL postgres://app:***@db/plane; set one of the two")`,
    )
    assert.isFalse(existsSync(store))
    const same = run(["migrate"], { AGENTPLANE_STORE: store, AGENTPLANE_DATABASE_URL: store })
    assert.strictEqual(await same.exit, 0, same.stderr())
    const flag = tempDb()
    const decided = run(["migrate", "--store", flag], conflict)
    assert.strictEqual(await decided.exit, 0, decided.stderr())
    assert.isTrue(existsSync(flag))
  })

  it("seed-demo refuses an invalid --tenant, naming it", async () => {
    const store = tempDb()
    const line = await refusal(["seed-demo", "--store", store, "--tenant", "acme/evil"])
    assert.strictEqual(
      line,
      `agentplane: --tenant "acme/evil" (or AGENTPLANE_TENANT): a tenant name must not contain "/" (no '/', ':' or control characters)`,
    )
    assert.isFalse(existsSync(store))
  })

  it("token-digest refuses a token an Authorization header would not carry as typed", async () => {
    for (const input of ["caf\u00e9-token", "tok\u0001en", "tok\u007fen"]) {
      const refused = run(["token-digest"], {}, input)
      assert.strictEqual(await refused.exit, 1, JSON.stringify(input))
      assert.match(refused.stderr(), /^agentplane: the token contains a character outside printable ASCII/)
      assert.strictEqual(refused.stdout(), "", "no digest printed")
    }
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
