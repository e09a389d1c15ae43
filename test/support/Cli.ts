/**
 * The `agentplane` command as an operator runs it, a real process (`node --import tsx
 * src/cli/Main.ts`), started without the developer's `AGENTPLANE_*` variables; and stores of each
 * backend made for a test (a SQLite file in the run's scratch directory, a fresh PostgreSQL
 * database), with the same store as a layer for seeding and reading back.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import type { Layer } from "effect"
import pg from "pg"
import { inject } from "vitest"
import type { Backend } from "../../src/errors/StoreError.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import type * as Stores from "../../src/services/Stores.js"

export interface Finished {
  readonly code: number | null
  /** The signal that ended the process, if one did. */
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** This process's environment without any `AGENTPLANE_*` variable, plus `extra`. */
export const env = (extra: Record<string, string> = {}): Record<string, string | undefined> => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_"))),
  ...extra,
})

/** Starts `node --import tsx <script> …args`; `done` resolves when it exits. */
export const startScript = (script: string, args: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    env: env(extra),
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8")
  })
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  const done = new Promise<Finished>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, stdout, stderr })),
  )
  return { child, done, stdout: () => stdout, stderr: () => stderr }
}

/** Starts the CLI; `done` resolves when it exits. */
export const start = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  startScript("src/cli/Main.ts", args, extra)

/** Runs the CLI to its end. */
export const cli = (args: ReadonlyArray<string>, extra: Record<string, string> = {}): Promise<Finished> =>
  start(args, extra).done

/** `serve …args`; `address` resolves with the base URL once it announces where it listens, and rejects if it exits first. */
export const serve = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
  const started = start(["serve", ...args], extra)
  const address = new Promise<string>((resolve, reject) => {
    started.child.stdout.on("data", () => {
      const match = /agentplane serving (http:\/\/\S+)/.exec(started.stdout())
      if (match?.[1] !== undefined) resolve(match[1])
    })
    void started.done.then((f) => reject(new Error(`serve exited ${f.code}: ${f.stderr}`)))
  })
  return { ...started, address }
}

/** `serve …args` to its exit; a server that starts after all is killed, so the test fails instead of hanging. */
export const refusedServe = (args: ReadonlyArray<string>, extra: Record<string, string> = {}): Promise<Finished> => {
  const server = serve(args, extra)
  server.address.then(
    () => server.child.kill("SIGKILL"),
    () => {},
  )
  return server.done
}

/** The JSON lines of a verb's standard output. */
export const lines = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { kind: string; [field: string]: unknown })

export interface Store {
  readonly name: string
  /** The `--store` value and the same store as a layer, for seeding; `drop` removes a PostgreSQL database. */
  readonly make: () => Promise<{
    readonly store: string
    readonly layer: Layer.Layer<Stores.Stores, Backend>
    readonly drop: () => Promise<void>
  }>
}

const scratch: Array<string> = []

/** A fresh path in the run's scratch directory, removed (with SQLite's side files) by `cleanUp`. */
export const scratchFile = (name: string): string => {
  const file = join(inject("scratchDir"), `${name}-${randomUUID()}`)
  scratch.push(file)
  return file
}

/** Removes every scratch file this module handed out (SQLite's side files, the KEK file `serve` writes beside a fresh store and an export's `.partial` too); call it from `afterAll`. */
export const cleanUp = () => {
  for (const file of scratch.splice(0))
    for (const suffix of ["", "-wal", "-shm", "-journal", ".kek", ".partial"])
      rmSync(`${file}${suffix}`, { force: true })
}

export const sqlite: Store = {
  name: "sqlite",
  make: async () => {
    const file = scratchFile("cli.db")
    return { store: file, layer: SqliteBackend.layer({ filename: file }), drop: async () => {} }
  },
}

export const postgres: Store = {
  name: "postgres",
  make: async () => {
    const name = `agentplane_cli_${randomUUID().replaceAll("-", "")}`
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
