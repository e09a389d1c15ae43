/**
 * Tampering and damage (§6.5, G3). The only tests that write journal rows with raw SQL: the
 * damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { Tenant } from "../../../src/domain/Tenant.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type SqlTester } from "../../support/Backend.js"
import { written } from "./Fixtures.js"

const corruptAt = (error: unknown, seq: number) => {
  const e = error as { _tag?: string; seq?: number }
  assert.deepStrictEqual([e._tag, e.seq], ["Corrupt", seq], `expected Corrupt at seq ${seq}, got ${String(error)}`)
}

/** Same length, one byte different: the body still parses, only the hash can tell. */
const flip = (raw: Uint8Array, from: string, to: string) =>
  Buffer.from(Buffer.from(raw).toString("utf8").replace(from, to), "utf8")

export const damage = (test: SqlTester) => {
  describe("tampering and damage", () => {
    test("an edited record's bytes make verify fail naming its seq", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const { run, records } = yield* written(4)
          const edited = flip(records[1]?.raw ?? new Uint8Array(), "note 2", "note X")
          yield* sql`UPDATE journal SET raw = ${edited} WHERE tenant = ${tenant} AND run_id = ${run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.verify(run)), 2)
        }),
      ))

    test("two edited records: verify names the first", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const { run, records } = yield* written(5)
          for (const seq of [4, 2]) {
            const edited = flip(records[seq - 1]?.raw ?? new Uint8Array(), `note ${seq}`, "note Z")
            yield* sql`UPDATE journal SET raw = ${edited} WHERE tenant = ${tenant} AND run_id = ${run} AND seq = ${seq}`
          }
          corruptAt(yield* Effect.flip(store.verify(run)), 2)
        }),
      ))

    test("a rewritten hash, a broken link and a missing record each name their seq", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const a = yield* written(3)
          yield* sql`UPDATE journal SET hash = ${Buffer.alloc(32, 7)} WHERE tenant = ${tenant} AND run_id = ${a.run} AND seq = 3`
          corruptAt(yield* Effect.flip(store.verify(a.run)), 3)
          const b = yield* written(3)
          yield* sql`UPDATE journal SET prev_hash = ${Buffer.alloc(32, 1)} WHERE tenant = ${tenant} AND run_id = ${b.run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.verify(b.run)), 2)
          const c = yield* written(3)
          yield* sql`DELETE FROM journal WHERE tenant = ${tenant} AND run_id = ${c.run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.verify(c.run)), 2)
        }),
      ))

    test("bytes that are not a body, or a digest of the wrong length, read as Corrupt at that seq", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const a = yield* written(2)
          yield* sql`UPDATE journal SET raw = ${Buffer.from("{not json")} WHERE tenant = ${tenant} AND run_id = ${a.run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.read(a.run, 1)), 2)
          corruptAt(yield* Effect.flip(store.verify(a.run)), 2)
          const b = yield* written(2)
          const unknownKind = Buffer.from(
            Buffer.from(b.records[0]?.raw ?? new Uint8Array())
              .toString("utf8")
              .replace('"Note"', '"Nope"'),
          )
          yield* sql`UPDATE journal SET raw = ${unknownKind} WHERE tenant = ${tenant} AND run_id = ${b.run} AND seq = 1`
          corruptAt(yield* Effect.flip(store.read(b.run, 1)), 1)
          const c = yield* written(2)
          yield* sql`UPDATE journal SET hash = ${Buffer.alloc(31)} WHERE tenant = ${tenant} AND run_id = ${c.run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.head(c.run)), 2)
          corruptAt(yield* Effect.flip(store.read(c.run, 2)), 2)
        }),
      ))

    test("a body copied from another seq is Corrupt at the seq it was planted in", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const { run, records } = yield* written(2)
          yield* sql`UPDATE journal SET raw = ${Buffer.from(records[0]?.raw ?? [])} WHERE tenant = ${tenant} AND run_id = ${run} AND seq = 2`
          corruptAt(yield* Effect.flip(store.read(run, 1)), 2)
        }),
      ))
  })
}
