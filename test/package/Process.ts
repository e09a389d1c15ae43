/**
 * Child processes as an operator runs them, for the package and README tests: spawned in their
 * own process group (as a shell job or a container is), with their output kept, an announced
 * address waited for with a deadline, and a stop that fails the test when the process hangs.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { assert } from "../support/Assert.js"

/** The repository root: the tests run from it. */
export const ROOT = process.cwd()

/** Generous: the machine running the suite is shared and busy. */
export const STARTUP_MS = 90_000

export interface Run {
  readonly child: ChildProcess
  readonly pid: number
  readonly stdout: () => string
  readonly stderr: () => string
  /** The exit code, or the signal's name when a signal ended it. */
  readonly exit: Promise<number | string>
}

/** The environment without any AGENTPLANE_* or npm_* variable of the developer's shell, plus `extra`. */
export const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_") && !name.startsWith("npm_")),
  ),
  ...extra,
})

/** Starts `command args` in `cwd`, in a process group of its own (its pid is the group's id). */
export const start = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string>; readonly stdin?: string },
): Run => {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: cleanEnv(options.env),
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  })
  let out = ""
  let err = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8")
  })
  // A child that exits before it reads its input closes the pipe first, and the write fails with
  // EPIPE. Unheard, that error event failed a whole clean-clone run (all 3,241 tests had passed)
  // from the README check's one-line bash; the exit code and output still say what happened.
  child.stdin?.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code !== "EPIPE") err += `stdin: ${e.message}\n`
  })
  child.stdin?.end(options.stdin ?? "")
  const exit = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  )
  if (child.pid === undefined) return assert.fail(`could not start ${command}`)
  return { child, pid: child.pid, stdout: () => out, stderr: () => err, exit }
}

/** Runs to the end and returns the exit code; a process still running after `ms` is killed and fails. */
export const finish = async (run: Run, ms = STARTUP_MS): Promise<number | string> => {
  const code = await Promise.race([run.exit, sleep(ms).then(() => "hung" as const)])
  if (code === "hung") {
    killGroup(run, "SIGKILL")
    return assert.fail(`still running after ${ms} ms\nstdout: ${run.stdout()}\nstderr: ${run.stderr()}`)
  }
  return code
}

/** The address `agentplane serve` announces once it listens; fails if it exits or stays silent first. */
export const listening = async (server: Run): Promise<string> => {
  const deadline = Date.now() + STARTUP_MS
  let exited = false
  void server.exit.then(() => {
    exited = true
  })
  while (Date.now() < deadline) {
    const match = /agentplane serving (http:\/\/[^\s]+)/.exec(server.stdout())
    if (match?.[1] !== undefined) return match[1]
    if (exited) break
    await sleep(100)
  }
  killGroup(server, "SIGKILL")
  return assert.fail(`serve did not announce an address\nstdout: ${server.stdout()}\nstderr: ${server.stderr()}`)
}

/** Sends `signal` to the one process `run` started, and only to it. */
export const signal = (run: Run, name: NodeJS.Signals): void => {
  process.kill(run.pid, name)
}

/** Sends `signal` to every process of `run`'s group (what a terminal's Ctrl-C or a container stop does). */
export const killGroup = (run: Run, name: NodeJS.Signals): void => {
  try {
    process.kill(-run.pid, name)
  } catch {
    // The group is gone already.
  }
}

/** Whether some process of `run`'s group is still alive. */
export const groupAlive = (run: Run): boolean => {
  try {
    process.kill(-run.pid, 0)
    return true
  } catch {
    return false
  }
}

/** Waits until no process of `run`'s group is left; one still there after `ms` is killed and fails. */
export const groupGone = async (run: Run, ms = 30_000): Promise<void> => {
  const deadline = Date.now() + ms
  while (groupAlive(run)) {
    if (Date.now() > deadline) {
      killGroup(run, "SIGKILL")
      return assert.fail(`a process of the group outlived the stop by ${ms} ms\nstdout: ${run.stdout()}`)
    }
    await sleep(100)
  }
}

/** Whether a new listener can bind `port` on 127.0.0.1, i.e. nothing holds it any more. */
export const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const probe = createServer()
    probe.once("error", () => resolve(false))
    probe.listen({ host: "127.0.0.1", port }, () => probe.close(() => resolve(true)))
  })

/** A free port on 127.0.0.1, found by binding port 0 and letting it go. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = probe.address()
      const port = address !== null && typeof address !== "string" ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Fails unless `dist/` holds a build: the package and README tests run the built JavaScript,
 * which `npm test` builds first; run alone, they need `npm run build`. Decided: only presence is
 * checked, not that every build is newer than its source. In a tree where others keep editing,
 * such a rule fails for edits that have nothing to do with packaging, and `npm test` rebuilds
 * right before the tests anyway.
 */
export const assertBuilt = (): void => {
  const missing = ["dist/src/index.js", "dist/src/index.d.ts", "dist/src/cli/Main.js"].filter(
    (file) => !existsSync(join(ROOT, file)),
  )
  assert.deepStrictEqual(missing, [], "dist/ is not built: run `npm run build` (npm test does)")
}
