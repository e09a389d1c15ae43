/**
 * Backend fixtures: what a conformance suite runs against. Suites consult `capabilities`, never
 * the backend's name.
 */
import { randomUUID } from "node:crypto"
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import type { Vitest } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"

export type Services = SqlStores.Stores | SqlClient.SqlClient

/** The `it.effect` a suite receives: tests may require the stores and the raw client. */
export type Tester = Vitest.Tester<Services>

export interface Backend {
  readonly name: string
  /** The stores, migrated, plus the raw client (only damage tests write rows with it). */
  readonly layer: Layer.Layer<Services, BackendError>
  /** A separate client with a pool of `size` connections, for race properties. */
  readonly pooled: (size: number) => Layer.Layer<Services, BackendError>
  readonly capabilities: {
    /** Statements of concurrent fibers really interleave in the database (not one serialised connection). */
    readonly concurrentWriters: boolean
  }
}

const withStores = (client: Layer.Layer<SqlClient.SqlClient, BackendError>) =>
  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(Layer.provideMerge(client))

export const postgres = (url: string): Backend => ({
  name: "postgres",
  layer: withStores(PgBackend.layerClient({ url, maxConnections: 4 })),
  pooled: (size) => withStores(PgBackend.layerClient({ url, maxConnections: size })),
  capabilities: { concurrentWriters: true },
})

/** A SQLite file of its own for this test file, removed when the process exits. */
export const sqlite = (): Backend => {
  const filename = join(tmpdir(), `agentplane-test-${randomUUID()}.db`)
  process.once("exit", () => {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${filename}${suffix}`, { force: true })
  })
  return {
    name: "sqlite",
    layer: withStores(SqliteBackend.layerClient({ filename })),
    // One client per file is the rule; a second one here plays the second process on the file.
    pooled: () => withStores(SqliteBackend.layerClient({ filename })),
    capabilities: { concurrentWriters: false },
  }
}

/**
 * Opens every connection of a fresh pool before a race. A new pool connects lazily, one fiber at
 * a time, so the first fibers of a "race" otherwise run one after another: a claim with no lock
 * at all passed 91 runs that way. Each warm-up transaction holds its connection briefly, so the
 * pool must open `size` of them.
 */
export const warmPool = (size: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all(
      Array.from({ length: size }, () =>
        sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Effect.sleep("20 millis"))),
      ),
      { concurrency: "unbounded", discard: true },
    ),
  ).pipe(Effect.orDie)

/** Runs `race` as a fresh tenant on a fresh, warmed pool of `size` connections. */
export const onPool =
  (backend: Backend, size: number) =>
  <A, E>(race: Effect.Effect<A, E, Services | Tenant>) =>
    Effect.zipRight(warmPool(size), race).pipe(asFreshTenant, Effect.provide(backend.pooled(size)))

/** A tenant no other test uses, so no test assumes empty tables or sees another's rows. */
export const freshTenant = (): TenantId => TenantId.make(`t-${randomUUID()}`)

/** Runs `effect` as a fresh tenant. */
export const asFreshTenant = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, Tenant, freshTenant())
