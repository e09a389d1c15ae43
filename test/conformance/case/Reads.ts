import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Case } from "../../../src/domain/Case.js"
import { type CaseId, CaseVersion, generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type SqlTester, type Tester } from "../../support/Backend.js"
import { at, deadline, digest, key, open, read } from "./Fixtures.js"

export const reads = (test: Tester, sqlTest: Option.Option<SqlTester>) => {
  describe("case", () => {
    test("keeps every key it ever held, released ones included, by (namespace, value)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("z", "1"), key("a", "b"), key("a", "a,b"), key("é", "x"), key("e", "x")])
          yield* store.close(a)
          assert.deepStrictEqual((yield* read(a)).correlation.map(String), ["a=a,b", "a=b", "e=x", "z=1", "é=x"])
        }),
      ))

    // Only a database has a caller's transaction to join.
    if (Option.isSome(sqlTest))
      sqlTest.value("a read inside the caller's own transaction joins it", () =>
        asFreshTenant(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const a = yield* open([key("doc", "1")])
            const seen = yield* sql.withTransaction(Effect.flatMap(CaseStore, (store) => store.case(a)))
            assert.deepStrictEqual(
              Option.map(seen, (c) => c.id),
              Option.some(a),
            )
          }),
        ),
      )

    test("an unknown id gives none", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          assert.deepStrictEqual(yield* store.case(generateCaseId()), Option.none())
        }),
      ))
  })

  describe("cases", () => {
    test("pages ascending by id, strictly after the cursor, reassembling every case exactly", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const ids: Array<CaseId> = []
          for (let i = 0; i < 5; i++) ids.push(yield* open([key("doc", String(i))], 1_000 + i))
          yield* store.putState(ids[2] ?? generateCaseId(), CaseVersion.make(0), { nested: { list: [1, 2] } })
          const pages: Array<ReadonlyArray<Case>> = []
          let after = Option.none<(typeof ids)[number]>()
          // Bounded, so a pager that never ends fails here instead of spinning.
          for (let i = 0; i < 10; i++) {
            const page = yield* store.cases(after, 2)
            if (page.length === 0) break
            pages.push(page)
            after = Option.fromNullable(page[page.length - 1]?.id)
          }
          assert.deepStrictEqual(
            pages.map((p) => p.length),
            [2, 2, 1],
          )
          const all = pages.flat()
          assert.deepStrictEqual(
            all.map((c) => c.id),
            [...ids].sort(),
          )
          for (const kase of all) assert.deepStrictEqual(kase, yield* read(kase.id))
          assert.deepStrictEqual(all.find((c) => c.id === ids[2])?.state, { nested: { list: [1, 2] } })
          assert.deepStrictEqual(yield* store.cases(Option.none(), 0), [])
        }),
      ))
  })

  describe("byStatus", () => {
    test("cases in the status, newest openedAt first, at most limit", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const old = yield* open([key("doc", "old")], 100)
          const mid = yield* open([key("doc", "mid")], 200)
          const neu = yield* open([key("doc", "new")], 300)
          const other = yield* open([key("doc", "other")], 400)
          for (const id of [old, mid, neu]) yield* store.setStatus(id, "escalated")
          assert.deepStrictEqual(
            (yield* store.byStatus("escalated", 10)).map((c) => c.id),
            [neu, mid, old],
          )
          assert.deepStrictEqual(
            (yield* store.byStatus("escalated", 2)).map((c) => c.id),
            [neu, mid],
          )
          assert.deepStrictEqual(
            (yield* store.byStatus("open", 10)).map((c) => c.id),
            [other],
          )
          assert.deepStrictEqual(yield* store.byStatus("escalated", 0), [])
        }),
      ))
  })

  describe("census", () => {
    test("counts open cases, the oldest one's age and the deadlines due (a warning alone does not count)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const empty = yield* store.census(at(10_000))
          assert.deepStrictEqual([empty.open, empty.oldestAgeSecs, empty.due], [0, Option.none(), 0])
          const first = yield* open([key("doc", "1")], 1_000)
          const second = yield* open([key("doc", "2")], 4_000)
          const closed = yield* open([key("doc", "3")], 500)
          yield* store.close(closed)
          yield* store.registerDeadline(deadline(first, "due", 9_000))
          yield* store.registerDeadline(deadline(first, "exactly", 10_000, "warned"))
          yield* store.registerDeadline(deadline(second, "warning-only", 20_000, "pending", 5_000))
          yield* store.registerDeadline(deadline(second, "met", 100, "met"))
          const census = yield* store.census(at(10_000))
          assert.deepStrictEqual([census.open, census.oldestAgeSecs, census.due], [2, Option.some(9_000), 2])
          const skewed = yield* store.census(at(0))
          assert.deepStrictEqual(skewed.oldestAgeSecs, Option.some(0))
        }),
      ))
  })

  describe("importCase", () => {
    const imported = (status: Case["status"]) => {
      const id = generateCaseId()
      const runs = [generateRunId(), generateRunId()]
      const kase = new Case({
        id,
        kind: "claim",
        status,
        correlation: [key("doc", `imp-${id}`), key("po", `imp-${id}`)],
        state: { restored: true },
        version: CaseVersion.make(7),
        openedAt: at(5_000),
        runs,
      })
      const reply = deadline(id, "reply", 6_000, "pending", 5_500)
      const old = deadline(id, "old", 5_100, "breached")
      return { kase, ds: [reply, old], reply, old, blobs: [digest("z"), digest("a"), digest("m")] }
    }

    test("writes the case as given and every read path answers as before export", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const { kase, ds, reply, old, blobs } = imported("awaiting_human")
          yield* store.importCase(kase, ds, blobs)
          assert.deepStrictEqual(yield* read(kase.id), kase)
          assert.deepStrictEqual(yield* store.cases(Option.none(), 10), [kase])
          assert.deepStrictEqual(yield* store.correlate([kase.correlation[1] ?? key("", "")]), Option.some(kase.id))
          assert.deepStrictEqual(yield* store.byStatus("awaiting_human", 10), [kase])
          assert.deepStrictEqual(yield* store.deadlines(kase.id), [old, reply])
          assert.deepStrictEqual(yield* store.due(at(6_000), 10), [reply])
          assert.deepStrictEqual(yield* store.breached(10), [old])
          assert.deepStrictEqual(yield* store.blobsOf(kase.id), blobs)
          assert.strictEqual(yield* store.putState(kase.id, CaseVersion.make(7), null), 8)
        }),
      ))

    test("a closed case's keys are imported closed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const { kase } = imported("closed")
          yield* store.importCase(kase, [], [])
          assert.deepStrictEqual(yield* store.correlate(kase.correlation), Option.none())
          const fresh = yield* store.correlateOrOpen("claim", kase.correlation, at(9_000))
          assert.strictEqual(fresh._tag, "Opened")
        }),
      ))

    test("an existing case id is refused and nothing changes", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const { kase, ds, blobs } = imported("open")
          yield* store.importCase(kase, ds, blobs)
          const again = new Case({ ...kase, kind: "other", version: CaseVersion.make(99) })
          const error = yield* Effect.flip(store.importCase(again, [], []))
          assert.strictEqual(error._tag, "ImportRefused")
          assert.deepStrictEqual(yield* read(kase.id), kase)
        }),
      ))

    test("an open key held by another open case is refused and nothing is written", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const { kase, ds, blobs } = imported("open")
          const holder = yield* open([kase.correlation[0] ?? key("", "")])
          const error = yield* Effect.flip(store.importCase(kase, ds, blobs))
          assert.strictEqual(error._tag, "ImportRefused")
          assert.deepStrictEqual(yield* store.case(kase.id), Option.none())
          assert.deepStrictEqual(yield* store.correlate(kase.correlation), Option.some(holder))
        }),
      ))

    test("deadlines of another case are refused", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const { kase } = imported("open")
          const error = yield* Effect.flip(store.importCase(kase, [deadline(generateCaseId(), "x", 1)], []))
          assert.strictEqual(error._tag, "ImportRefused")
          assert.deepStrictEqual(yield* store.case(kase.id), Option.none())
        }),
      ))
  })
}
