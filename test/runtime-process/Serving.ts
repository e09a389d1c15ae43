/**
 * Real `agentplane serve` processes for the process tests: spawned as `node --import tsx
 * src/cli/Main.ts serve`, never through npm or npx, so `kill -9` reaches the server itself; a
 * credential table of a fresh tenant with its tokens; and the few HTTP calls the tests make.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createHash, randomUUID } from "node:crypto"
import { join } from "node:path"

const ROOT = join(import.meta.dirname, "..", "..")
const MAIN = join(ROOT, "src", "cli", "Main.ts")

/** A tenant of its own, with an agent (events), a reviewer (tasks, runs) and their tokens. */
export interface Tenancy {
  readonly tenant: string
  readonly agent: string
  readonly reviewer: string
  readonly tokensJson: string
  /** The Cedar route policy (`routes.cedar` beside this module), a path for `AGENTPLANE_POLICY`. */
  readonly policy: string
}

export const tenancy = (agentActor: string): Tenancy => {
  const tenant = `t-serve-${randomUUID()}`
  const agent = `agent-${randomUUID()}`
  const reviewer = `reviewer-${randomUUID()}`
  const digest = (token: string) => createHash("sha256").update(token).digest("hex")
  return {
    tenant,
    agent,
    reviewer,
    tokensJson: JSON.stringify([
      { digest: digest(agent), tenant, actor: agentActor, roles: ["agent"] },
      { digest: digest(reviewer), tenant, actor: "alice", roles: ["reviewer"] },
    ]),
    policy: join(import.meta.dirname, "routes.cedar"),
  }
}

export interface Server {
  readonly base: string
  readonly child: ChildProcess
  /** Everything the process wrote to standard error so far. */
  readonly stderr: () => string
  /** Resolves with the signal or exit code once the process has ended. */
  readonly ended: Promise<string>
}

/** Starts `serve` with `args` and `env`, resolving once it announces its address. */
export const start = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--addr", "127.0.0.1:0", ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stdout = ""
    let stderr = ""
    let announced = false
    const ended = new Promise<string>((done) => child.on("exit", (code, signal) => done(signal ?? `exit ${code}`)))
    const guard = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`serve did not announce its address within 60 s: ${stderr}`))
    }, 60_000)
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      stderr += chunk.includes("level=") ? chunk : ""
      const address = /agentplane serving (\S+)/.exec(stdout)?.[1]
      if (address !== undefined && !announced) {
        announced = true
        clearTimeout(guard)
        const base = address.startsWith("http") ? address : `http://${address}`
        resolve({ base, child, stderr: () => stderr, ended })
      }
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.on("error", reject)
    void ended.then((how) => {
      clearTimeout(guard)
      if (!announced) reject(new Error(`serve ended (${how}) before serving: ${stderr}`))
    })
  })

/** Stops `server` (SIGTERM, then SIGKILL after 10 s), whatever state it is in. */
export const stop = async (server: Server): Promise<void> => {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill("SIGTERM")
  const late = setTimeout(() => server.child.kill("SIGKILL"), 10_000)
  await server.ended
  clearTimeout(late)
}

/** One JSON call; the status and the parsed body (text when it is not JSON). */
export const call = async (
  base: string,
  method: "GET" | "POST",
  path: string,
  token: string,
  body?: unknown,
): Promise<{ readonly status: number; readonly body: unknown }> => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  try {
    return { status: response.status, body: JSON.parse(text) as unknown }
  } catch {
    return { status: response.status, body: text }
  }
}

/**
 * `call` that expects `status`, failing with the answer otherwise. A 503 is retried (200 ms
 * apart, for up to 30 s: a loaded machine can keep a store busy for seconds), as §8.2 tells a
 * client to: every call the tests make is safe to repeat (an admission key, an event's id, a
 * decision of record).
 */
export const expectCall = async (
  status: number,
  ...args: Parameters<typeof call>
): Promise<Record<string, unknown>> => {
  let answer = await call(...args)
  for (const until = Date.now() + 30_000; answer.status === 503 && Date.now() < until; ) {
    unavailable += 1
    await new Promise((r) => setTimeout(r, 200))
    answer = await call(...args)
  }
  if (answer.status !== status) {
    throw new Error(`${args[1]} ${args[2]}: expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`)
  }
  return answer.body as Record<string, unknown>
}

/** How many 503s `expectCall` retried in this process (a test may report or bound it). */
export let unavailable = 0

/**
 * Polls `check` every 250 ms until it answers true, for as long as the system shows progress:
 * fails naming `what` only once `progress` (any value that changes when work gets done: a run's
 * journal head, a count of finished runs) has not changed for `stallMs`. A loaded box is slow
 * but moves; a lost wake-up or a hang stops moving. A fixed bound failed healthy runs at load 25.
 */
export const whileProgressing = async (
  what: string | (() => string),
  stallMs: number,
  check: () => Promise<boolean>,
  progress: () => Promise<unknown>,
): Promise<void> => {
  let last = JSON.stringify(await progress())
  let movedAt = Date.now()
  for (;;) {
    if (await check()) return
    const now = JSON.stringify(await progress())
    if (now !== last) {
      last = now
      movedAt = Date.now()
    } else if (Date.now() - movedAt > stallMs) {
      throw new Error(
        `no progress for ${stallMs} ms (last seen ${last}) waiting for ${typeof what === "string" ? what : what()}`,
      )
    }
    await new Promise((r) => setTimeout(r, 250))
  }
}
