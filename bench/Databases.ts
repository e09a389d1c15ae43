/**
 * The throwaway databases a run works in, and the Effect runtimes over them. The bench never
 * touches a database it did not create: a fresh `agentplane_bench_<time>` on the server and a
 * fresh temp file, both removed at the end, on error and on Ctrl-C.
 */
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SqlClient } from "@effect/sql"
import { Layer, ManagedRuntime } from "effect"
import pg from "pg"
import * as Migrations from "../src/layers/Migrations.js"
import * as PgBackend from "../src/layers/PgBackend.js"
import * as SqliteBackend from "../src/layers/SqliteBackend.js"
import * as SqlStores from "../src/layers/SqlStores.js"

export type Services = SqlStores.Stores | SqlClient.SqlClient
export type Runtime = ManagedRuntime.ManagedRuntime<Services, unknown>

export interface Throwaway {
  readonly pgUrl: string
  readonly pgName: string
  readonly sqliteFile: string
  /** Drops the database and removes the file; safe to call twice. */
  readonly remove: () => Promise<void>
}

export const ADMIN_URL = process.env.DATABASE_URL?.trim() || "postgres://postgres@127.0.0.1:5432/postgres"

/** A fresh database and file; `suffix` tells apart a second one the same process makes in the same second. */
export const create = async (suffix = ""): Promise<Throwaway> => {
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14)
  const pgName = `agentplane_bench_${stamp}_${process.pid}${suffix}`
  await admin(`CREATE DATABASE ${pgName}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${pgName}`
  const sqliteFile = join(tmpdir(), `${pgName}.db`)
  let removed = false
  return {
    pgUrl: url.toString(),
    pgName,
    sqliteFile,
    remove: async () => {
      if (removed) return
      removed = true
      for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${sqliteFile}${suffix}`, { force: true })
      // FORCE: a pool a crash left open must not keep the database alive.
      await admin(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`)
    },
  }
}

/** The stores migrated through the product's own layers, plus the raw client, on a pool of `size`. */
export const pgRuntime = (url: string, size: number): Runtime =>
  ManagedRuntime.make(withStores(PgBackend.layerClient({ url, maxConnections: size })))

export const sqliteRuntime = (filename: string): Runtime =>
  ManagedRuntime.make(withStores(SqliteBackend.layerClient({ filename })))

/** The server's version line, for the report. */
export const serverVersion = async (url: string): Promise<string> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const result = await client.query<{ server_version: string }>("SHOW server_version")
    return result.rows[0]?.server_version ?? "unknown"
  } finally {
    await client.end()
  }
}

// internal

const withStores = (client: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(Layer.provideMerge(client))

const admin = async (statement: string): Promise<void> => {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
