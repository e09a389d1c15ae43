/**
 * The BlobStore battery (§9.1): run against the table-backed layer on a backend with SQL, the
 * memory layer otherwise, and (from test/erasure) the filesystem layer.
 */
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Tenant } from "../../src/domain/Tenant.js"
import * as BlobStoreSql from "../../src/layers/BlobStoreSql.js"
import { digestParam } from "../../src/layers/internal/Columns.js"
import * as BlobStoreMemory from "../../src/layers/memory/BlobStoreMemory.js"
import type { Backend } from "../support/Backend.js"
import { contract } from "./blob/Contract.js"
import type { BlobFixture } from "./blob/Fixture.js"

/** The battery on one fixture. */
export const suiteOn = <R>(fixture: BlobFixture<R>) =>
  describe(`BlobStore (${fixture.name})`, () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(fixture.layer, { excludeTestServices: true })((it) => contract(it.effect, fixture))
  })

/** The battery on a store backend: `blobs` in its database where it has one, else in memory. */
export const suite = (backend: Backend) =>
  Option.match(backend.sql, {
    onNone: () =>
      suiteOn<never>({
        name: "memory",
        layer: BlobStoreMemory.layer,
        tamper: Option.none(),
        concurrentWriters: false,
      }),
    onSome: (sql) =>
      suiteOn<SqlClient.SqlClient>({
        name: `${backend.name} table`,
        layer: Layer.provideMerge(BlobStoreSql.layer, sql.layer),
        tamper: Option.some((digest, bytes) =>
          Effect.gen(function* () {
            const client = yield* SqlClient.SqlClient
            const tenant = yield* Tenant
            yield* client`UPDATE blobs SET bytes = ${Buffer.from(bytes)} WHERE tenant = ${tenant} AND digest = ${digestParam(digest)}`
          }),
        ),
        concurrentWriters: backend.capabilities.concurrentWriters,
      }),
  })
