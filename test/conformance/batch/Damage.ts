/**
 * G3: nothing is invented on read. These are the only tests that write rows with raw SQL: the
 * damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type BatchId, generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { BatchStore } from "../../../src/services/BatchStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type SqlTester } from "../../support/Backend.js"
import { openBatch } from "./Fixtures.js"

/** Opens a batch through the store, plants one raw item row, and expects every item read to be `Corrupt`. */
const plant = (row: { run?: string; outcome: string | null; detail: string | null }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tenant = freshTenant()
    const b = yield* openBatch().pipe(Effect.provideService(Tenant, tenant))
    yield* sql`INSERT INTO batch_items (tenant, batch_id, item_key, run_id, outcome, detail)
               VALUES (${tenant}, ${b}, ${"0001"}, ${row.run ?? generateRunId()}, ${row.outcome}, ${row.detail})`
    return { tenant, batch: b }
  })

const expectCorrupt = <A, E>(tenant: string, read: Effect.Effect<A, E, BatchStore | Tenant>) =>
  Effect.gen(function* () {
    const error = yield* Effect.flip(read).pipe(Effect.provideService(Tenant, tenant as never))
    assert.strictEqual((error as { _tag?: string })._tag, "Corrupt", `expected Corrupt, got ${String(error)}`)
  })

const reads = (b: BatchId) => ({
  items: Effect.flatMap(BatchStore, (s) => s.items(b, 10)),
  reserve: Effect.flatMap(BatchStore, (s) => s.reserve(b, "0001", generateRunId())),
  census: Effect.flatMap(BatchStore, (s) => s.census(b)),
})

export const damage = (test: SqlTester) => {
  describe("damage reads as Corrupt", () => {
    test("an unknown outcome string, in items, reserve and census", () =>
      Effect.gen(function* () {
        const { tenant, batch } = yield* plant({ outcome: "skipped", detail: "x" })
        const r = reads(batch)
        yield* expectCorrupt(tenant, r.items)
        yield* expectCorrupt(tenant, r.reserve)
        yield* expectCorrupt(tenant, r.census)
      }))

    test("a detail-bearing outcome stored without its detail", () =>
      Effect.gen(function* () {
        const { tenant, batch } = yield* plant({ outcome: "failed", detail: null })
        const r = reads(batch)
        yield* expectCorrupt(tenant, r.items)
        yield* expectCorrupt(tenant, r.reserve)
      }))

    test("a run id that does not parse", () =>
      Effect.gen(function* () {
        const { tenant, batch } = yield* plant({ run: "run_garbage", outcome: null, detail: null })
        const r = reads(batch)
        yield* expectCorrupt(tenant, r.items)
        yield* expectCorrupt(tenant, r.reserve)
      }))

    test("a spend past the safe integers, in items and reserve (the records are built from the decoded row alone)", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { tenant, batch } = yield* plant({ outcome: "succeeded", detail: null })
        // 2^60 as text: sqlite keeps the integer, pg's BIGINT too; neither fits a JS safe integer.
        yield* sql`UPDATE batch_items SET tokens = ${"1152921504606846976"} WHERE tenant = ${tenant} AND batch_id = ${batch}`
        const r = reads(batch)
        yield* expectCorrupt(tenant, r.items)
        yield* expectCorrupt(tenant, r.reserve)
      }))

    test("an unknown outcome string holds the cursor back instead of passing for settled", () =>
      Effect.gen(function* () {
        const { tenant, batch } = yield* plant({ outcome: "skipped", detail: "x" })
        const cursor = yield* Effect.flatMap(BatchStore, (s) => s.cursor(batch)).pipe(
          Effect.provideService(Tenant, tenant as never),
        )
        assert.deepStrictEqual(cursor, Option.none())
      }))

    test("damage in one tenant does not reach another's census", () =>
      Effect.gen(function* () {
        const { batch } = yield* plant({ outcome: "skipped", detail: "x" })
        const clean = freshTenant()
        const c = yield* Effect.flatMap(BatchStore, (s) => s.census(batch)).pipe(Effect.provideService(Tenant, clean))
        assert.strictEqual(c.inFlight, 0)
      }))
  })
}
