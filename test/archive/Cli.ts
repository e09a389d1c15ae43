/**
 * Spawning the archive verbs as an operator runs them (`node --import tsx src/cli/Main.ts`), on a
 * store of each backend made for the test: a SQLite file in the run's scratch directory or a
 * fresh PostgreSQL database, with the same store as a layer for seeding and reading back.
 */
import { type ChildProcess, spawn } from "node:child_process"
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
  readonly stdout: string
  readonly stderr: string
}

const env = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENTPLANE_"))),
  ...extra,
})

/** Starts the CLI without the developer's AGENTPLANE_* variables; `done` resolves when it exits. */
export const start = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/cli/Main.ts", ...args], {
    env: env(extra),
  })
  let stdout = ""
  let stderr = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  const done = new Promise<Finished>((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })))
  return { child, done }
}

export const cli = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) => start(args, extra).done

/**
 * The CLI under a pseudo-terminal (util-linux `script`), so standard error is a TTY as it is for
 * a person; what the terminal showed comes back as `stdout`.
 */
export const onTerminal = (args: ReadonlyArray<string>): Promise<Finished> => {
  const command = [process.execPath, "--import", "tsx", "src/cli/Main.ts", ...args]
    .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
    .join(" ")
  return new Promise((resolve) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], { env: env({}) })
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.once("exit", (code) => resolve({ code, stdout, stderr: "" }))
  })
}

export interface Store {
  readonly name: string
  readonly make: () => Promise<{
    readonly store: string
    readonly layer: Layer.Layer<Stores.Stores, Backend>
    readonly drop: () => Promise<void>
  }>
}

const scratch: Array<string> = []

export const scratchFile = (name: string): string => {
  const file = join(inject("scratchDir"), `${name}-${randomUUID()}`)
  scratch.push(file)
  return file
}

/** Removes every scratch file this module handed out (and SQLite's side files). */
export const cleanUp = () => {
  for (const file of scratch)
    for (const suffix of ["", "-wal", "-shm", "-journal", ".partial"]) rmSync(`${file}${suffix}`, { force: true })
}

export const sqlite: Store = {
  name: "sqlite",
  make: async () => {
    const file = scratchFile("archive.db")
    return { store: file, layer: SqliteBackend.layer({ filename: file }), drop: async () => {} }
  },
}

export const postgres: Store = {
  name: "postgres",
  make: async () => {
    const name = `agentplane_archive_${randomUUID().replaceAll("-", "")}`
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
