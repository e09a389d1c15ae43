/**
 * Backend fixtures: what a conformance suite runs against. Suites consult `capabilities` and
 * whether the backend offers raw `sql`, never the backend's name.
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import type { Statement } from "@effect/sql/Statement"
import { layer, type Vitest } from "@effect/vitest"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { inject } from "vitest"
import type * as Journal from "../../src/domain/Journal.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as SealedStores from "../../src/erasure/SealedStores.js"
import type { Backend as BackendError } from "../../src/errors/StoreError.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as MemoryBackend from "../../src/layers/memory/MemoryBackend.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { KeyRing } from "../../src/services/KeyRing.js"

/** What a store-level test may require: the stores, and nothing that only a database has. */
export type Stores = SqlStores.Stores

/** The stores and the raw client: what a backend with `sql` provides. */
export type Services = Stores | SqlClient.SqlClient

/** The `it.effect` a suite receives for store-level tests, which run on every backend. */
export type Tester = Vitest.Tester<Stores>

/** The `it.effect` of the tests that need the raw client: planted damage, transactions, plans. */
export type SqlTester = Vitest.Tester<Services>

/** How to ask the backend's planner for a statement's plan, as text. */
export type Explain = (statement: Statement<unknown>) => Effect.Effect<string, unknown, SqlClient.SqlClient>

/** Raw SQL over the database the stores use; only a backend that has one offers it. */
export interface SqlAccess {
  /** The same migrated stores as `Backend.layer`, plus the raw client on the same database. */
  readonly layer: Layer.Layer<Services, BackendError>
  /** The planner, where it is worth asking (the queue's index check). */
  readonly explain: Option.Option<Explain>
}

export interface Backend {
  readonly name: string
  /** The stores, ready to use. */
  readonly layer: Layer.Layer<Stores, BackendError>
  /** The stores through a separate client with a pool of `size` connections (warmed), for race properties. */
  readonly pooled: (size: number) => Layer.Layer<Stores, BackendError>
  /** Present where the backend is a database: the only way a test reaches rows without the stores. */
  readonly sql: Option.Option<SqlAccess>
  readonly capabilities: {
    /** Statements of concurrent fibers really interleave in the database (not one serialised connection). */
    readonly concurrentWriters: boolean
  }
  /** Present where the stores seal payloads: the key ring they seal through (an export's payloads stay sealed). */
  readonly keyRing?: Layer.Layer<KeyRing>
}

/**
 * The replay gate's `open` for a backend that seals (an export's payloads stay sealed), and nothing
 * for one that does not: spread into `ReplayGate.check`'s options.
 */
export const replayOpener = (backend: Backend) => {
  const ring = backend.keyRing
  return ring === undefined
    ? {}
    : {
        open: (records: ReadonlyArray<Journal.Record>) =>
          Effect.flatMap(KeyRing, (keys) => SealedStores.openRecords(keys)(records)).pipe(Effect.provide(ring)),
      }
}

/**
 * Registers a battery on the backend's stores. `register` gets the store-level tester and, where
 * the backend offers raw SQL, a tester that may also require the client; both share one layer.
 */
export const battery = (backend: Backend, register: (test: Tester, sql: Option.Option<SqlTester>) => void) =>
  // Real databases and real time: the TestClock would only stall the driver's timers.
  Option.match(backend.sql, {
    onNone: () => layer(backend.layer, { excludeTestServices: true })((it) => register(it.effect, Option.none())),
    onSome: (sql) =>
      layer(sql.layer, { excludeTestServices: true })((it) => register(it.effect, Option.some(it.effect))),
  })

const withStores = (client: Layer.Layer<SqlClient.SqlClient, BackendError>) =>
  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(Layer.provideMerge(client))

/**
 * Opens every connection of a fresh pool before a race. A new pool connects lazily, one fiber at
 * a time, so the first fibers of a "race" otherwise run one after another: a claim with no lock
 * at all passed 91 runs that way. Each warm-up transaction holds its connection briefly, so the
 * pool must open `size` of them.
 */
const warmed = (size: number) => (stores: Layer.Layer<Services, BackendError>) =>
  Layer.tap(stores, (context) => {
    const sql = Context.get(context, SqlClient.SqlClient)
    return Effect.all(
      Array.from({ length: size }, () =>
        sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Effect.sleep("20 millis"))),
      ),
      { concurrency: "unbounded", discard: true },
    ).pipe(Effect.orDie)
  })

/** PostgreSQL's plan for a statement, one line per plan node. */
const postgresExplain: Explain = (statement) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`EXPLAIN ${statement}`
    return Schema.decodeUnknownSync(Schema.Array(Schema.Struct({ "QUERY PLAN": Schema.String })))(rows)
      .map((r) => r["QUERY PLAN"])
      .join("\n")
  })

export const postgres = (url: string): Backend => {
  const stores = withStores(PgBackend.layerClient({ url, maxConnections: 4 }))
  return {
    name: "postgres",
    layer: stores,
    pooled: (size) => withStores(PgBackend.layerClient({ url, maxConnections: size })).pipe(warmed(size)),
    sql: Option.some({ layer: stores, explain: Option.some(postgresExplain) }),
    capabilities: { concurrentWriters: true },
  }
}

/** A SQLite file of its own for this test file, in the run's scratch directory (removed when the run ends). */
export const sqlite = (): Backend => {
  const filename = join(inject("scratchDir"), `sqlite-${randomUUID()}.db`)
  const stores = withStores(SqliteBackend.layerClient({ filename }))
  return {
    name: "sqlite",
    layer: stores,
    // One client per file is the rule; a second one here plays the second process on the file.
    pooled: (size) => withStores(SqliteBackend.layerClient({ filename })).pipe(warmed(size)),
    sql: Option.some({ layer: stores, explain: Option.none() }),
    capabilities: { concurrentWriters: false },
  }
}

/**
 * The in-memory stores. One set per call, shared by `layer` and `pooled` as a SQLite file is
 * shared by its clients, so a "second client" sees what the first wrote. No raw SQL: the tests
 * that plant damage or read plans have nothing to reach here.
 */
export const memory = (): Backend => {
  const shared = Layer.succeedContext(Effect.runSync(Effect.scoped(Layer.build(MemoryBackend.layer))))
  return {
    name: "memory",
    layer: shared,
    pooled: () => shared,
    sql: Option.none(),
    capabilities: { concurrentWriters: false },
  }
}

/** Runs `race` as a fresh tenant through a fresh client of `size` connections. */
export const onPool =
  (backend: Backend, size: number) =>
  <A, E>(race: Effect.Effect<A, E, Stores | Tenant>) =>
    race.pipe(asFreshTenant, Effect.provide(backend.pooled(size)))

/** A tenant no other test uses, so no test assumes empty tables or sees another's rows. */
export const freshTenant = (): TenantId => TenantId.make(`t-${randomUUID()}`)

/** Runs `effect` as a fresh tenant. */
export const asFreshTenant = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, Tenant, freshTenant())
