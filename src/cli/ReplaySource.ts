/**
 * Where `agentplane replay` reads its runs (§7.13): an export's lines from a file or standard
 * input, or a store read in place, as `export` would write it, without a file in between.
 *
 * A store is read only: its client is opened without migrating, and no store is built that writes
 * when it starts. So the store must already be at this build's schema; one that is behind (or not
 * an agentplane store) is refused before a run is read (`StoreSchemaBehind`), since reading it
 * under this build's statements would fail part-way or, worse, read it wrong. Migrate it first
 * (`agentplane migrate`), or export it with the build that wrote it and replay the file.
 */
import { existsSync } from "node:fs"
import type { PlatformError } from "@effect/platform/Error"
import type * as FileSystem from "@effect/platform/FileSystem"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema, type Scope, Stream } from "effect"
import * as Export from "../archive/Export.js"
import { Tenant, type TenantId } from "../domain/Tenant.js"
import type { Backend, Corrupt } from "../errors/StoreError.js"
import * as Sql from "../layers/internal/Sql.js"
import * as JournalArchiveSql from "../layers/JournalArchiveSql.js"
import * as Migrations from "../layers/Migrations.js"
import * as SqlStores from "../layers/SqlStores.js"
import { readLines } from "./Export.js"
import * as StoreFlag from "./StoreFlag.js"

/** The store's schema is not the one this build reads. */
export class StoreSchemaBehind extends Schema.TaggedError<StoreSchemaBehind>()("StoreSchemaBehind", {
  store: Schema.String,
  at: Schema.Number,
  expected: Schema.Number,
}) {
  override get message(): string {
    return this.at === 0
      ? `${this.store} has no agentplane schema: replay reads a store as it is and never migrates it`
      : `${this.store} is at migration ${this.at} and this build reads migration ${this.expected}: run agentplane migrate on it first, or export it with the build that wrote it and replay the file`
  }
}

/** The newest migration this build's dialect set holds (ids are numbered from 1). */
const newest = (set: Readonly<Record<string, ReadonlyArray<string>>>): number =>
  Math.max(...Object.keys(set).map((id) => Number.parseInt(id, 10)))

/**
 * The newest migration applied to the client's store; 0 when it has none (no bookkeeping table).
 * The table is looked up first, so only its absence reads as 0: a failing connection or query
 * stays a `Backend` failure rather than passing for a store without a schema.
 */
const applied: Effect.Effect<number, Backend, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql.onDialectOrElse({
    pg: () => sql<{ readonly found: unknown }>`SELECT to_regclass('agentplane_migrations') IS NOT NULL AS found`,
    orElse: () =>
      sql<{
        readonly found: unknown
      }>`SELECT count(*) > 0 AS found FROM sqlite_master WHERE type = 'table' AND name = 'agentplane_migrations'`,
  })
  const found = tables[0]?.found
  if (found !== true && found !== 1) return 0
  const rows = yield* sql<{
    readonly at: number | string | null
  }>`SELECT max(migration_id) AS at FROM agentplane_migrations`
  return Number(rows[0]?.at ?? 0)
}).pipe(Sql.orBackend)

/**
 * The export's lines of `tenant` read from `store` in place; the store stays open for the scope.
 * Fails before reading a run when the store is not at this build's schema.
 */
export const fromStore = (
  store: string,
  tenant: TenantId,
): Effect.Effect<
  Stream.Stream<string, Backend | Corrupt>,
  Backend | StoreFlag.StoreInvalid | StoreSchemaBehind,
  Scope.Scope
> =>
  Effect.gen(function* () {
    // SQLite would create a missing file: a replay creates nothing.
    if (!StoreFlag.isPostgres(store) && !existsSync(store)) {
      return yield* new StoreFlag.StoreInvalid({
        store: StoreFlag.show(store),
        detail: "no such file: replay reads a store in place and creates none",
      })
    }
    const client = yield* Layer.build(StoreFlag.layerClient(store))
    const at = yield* Effect.provide(applied, client)
    const expected = StoreFlag.isPostgres(store) ? newest(Migrations.pg) : newest(Migrations.sqlite)
    if (at !== expected) return yield* new StoreSchemaBehind({ store: StoreFlag.show(store), at, expected })
    const stores = yield* Layer.build(
      Layer.merge(SqlStores.layer, JournalArchiveSql.layer).pipe(Layer.provide(Layer.succeedContext(client))),
    )
    return Export.lines().pipe(Stream.provideSomeContext(stores), Stream.provideService(Tenant, tenant))
  })

/** `--from` when given (`-`: standard input), else `--store` read in place, else standard input. */
export const lines = (
  from: string | undefined,
  store: string | undefined,
  tenant: TenantId,
): Effect.Effect<
  Stream.Stream<string, Backend | Corrupt | PlatformError>,
  Backend | StoreFlag.StoreInvalid | StoreSchemaBehind,
  FileSystem.FileSystem | Scope.Scope
> =>
  from === undefined && store !== undefined
    ? fromStore(store, tenant)
    : Effect.map(readLines(from ?? "-"), (read): Stream.Stream<string, PlatformError> => read)
