import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { CaseVersion, generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { CaseConflict, NotFound } from "../../../src/errors/StoreError.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type SqlTester, type Tester } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, deadline, digest, key, open, read } from "./Fixtures.js"

const v = (n: number) => CaseVersion.make(n)

export const records = (test: Tester, sqlTest: Option.Option<SqlTester>) => {
  describe("attachRun / detachRun", () => {
    test("runs come back in attachment order and a repeat changes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const [r1, r2, r3] = [generateRunId(), generateRunId(), generateRunId()]
          yield* store.attachRun(a, r2)
          yield* store.attachRun(a, r1)
          yield* store.attachRun(a, r2)
          yield* store.attachRun(a, r3)
          assert.deepStrictEqual((yield* read(a)).runs, [r2, r1, r3])
        }),
      ))

    test("attaching to a missing case is NotFound", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(yield* Effect.flip(store.attachRun(missing, generateRunId())), new NotFound({ what: missing }))
        }),
      ))

    test("detach answers whether a row went, and the others keep their order", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const [r1, r2, r3] = [generateRunId(), generateRunId(), generateRunId()]
          yield* store.attachRun(a, r1)
          yield* store.attachRun(a, r2)
          assert.isTrue(yield* store.detachRun(a, r1))
          assert.isFalse(yield* store.detachRun(a, r1))
          assert.isFalse(yield* store.detachRun(generateCaseId(), r2))
          yield* store.attachRun(a, r3)
          assert.deepStrictEqual((yield* read(a)).runs, [r2, r3])
        }),
      ))

    // Positions are not part of the API; only the rows show whether one was handed out twice.
    if (Option.isSome(sqlTest))
      sqlTest.value("a detached last run's position is never handed out again", () =>
        asFreshTenant(
          Effect.gen(function* () {
            const store = yield* CaseStore
            const sql = yield* SqlClient.SqlClient
            const a = yield* open([key("doc", "1")])
            const [r1, r2, r3] = [generateRunId(), generateRunId(), generateRunId()]
            yield* store.attachRun(a, r1)
            yield* store.attachRun(a, r2)
            assert.isTrue(yield* store.detachRun(a, r2))
            yield* store.attachRun(a, r3)
            const rows = yield* sql`SELECT run_id, seq FROM case_runs WHERE case_id = ${a} ORDER BY seq`
            assert.deepStrictEqual(
              rows.map((r) => [r.run_id, Number(r.seq)]),
              [
                [r1, 0],
                [r3, 2],
              ],
            )
          }),
        ),
      )
  })

  describe("linkBlob / blobsOf", () => {
    test("one link per digest, the first writtenAt stands, read by writtenAt then digest", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const [d1, d2, d3] = [digest("one"), digest("two"), digest("three")].sort()
          if (d1 === undefined || d2 === undefined || d3 === undefined) throw new Error("three digests")
          yield* store.linkBlob(a, d3, at(10))
          yield* store.linkBlob(a, d2, at(20))
          yield* store.linkBlob(a, d1, at(20))
          yield* store.linkBlob(a, d3, at(30))
          assert.deepStrictEqual(yield* store.blobsOf(a), [d3, d1, d2])
        }),
      ))

    test("only the case's own digests", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const b = yield* open([key("doc", "2")])
          yield* store.linkBlob(a, digest("a"), at(1))
          yield* store.linkBlob(b, digest("b"), at(1))
          assert.deepStrictEqual(yield* store.blobsOf(a), [digest("a")])
          assert.deepStrictEqual(yield* store.blobsOf(generateCaseId()), [])
        }),
      ))

    test("linking to a missing case is NotFound", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(yield* Effect.flip(store.linkBlob(missing, digest("x"), at(1))), new NotFound({ what: missing }))
        }),
      ))
  })

  describe("putState", () => {
    test("writes at the expected version and returns the next", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          const state = { amount: 12.5, items: [1, "two", null, { deep: [true] }], note: "ünïcödé \u0000" }
          assert.strictEqual(yield* store.putState(a, v(0), state), 1)
          assert.strictEqual(yield* store.putState(a, v(1), [state]), 2)
          const kase = yield* read(a)
          assert.strictEqual(kase.version, 2)
          assert.deepStrictEqual(kase.state, [state])
        }),
      ))

    test("a stale version is CaseConflict naming the current one, and nothing changes", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.putState(a, v(0), "first")
          yield* store.putState(a, v(1), "second")
          const error = yield* Effect.flip(store.putState(a, v(0), "late"))
          assertError(error, new CaseConflict({ case: a, expected: 0, current: 2 }))
          const ahead = yield* Effect.flip(store.putState(a, v(7), "invented"))
          assertError(ahead, new CaseConflict({ case: a, expected: 7, current: 2 }))
          const kase = yield* read(a)
          assert.strictEqual(kase.state, "second")
          assert.strictEqual(kase.version, 2)
        }),
      ))

    test("a missing case is NotFound, not a conflict", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(yield* Effect.flip(store.putState(missing, v(0), null)), new NotFound({ what: missing }))
        }),
      ))
  })

  describe("setStatus", () => {
    test("any status but closed is a plain write: no version bump, keys stay open", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.setStatus(a, "awaiting_human")
          yield* store.setStatus(a, "escalated")
          const kase = yield* read(a)
          assert.strictEqual(kase.status, "escalated")
          assert.strictEqual(kase.version, 0)
          assert.deepStrictEqual(yield* store.correlate([key("doc", "1")]), Option.some(a))
        }),
      ))

    test("closed behaves exactly as close", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const a = yield* open([key("doc", "1")])
          yield* store.registerDeadline(deadline(a, "reply", 100))
          const refused = yield* Effect.flip(store.setStatus(a, "closed"))
          assert.strictEqual(refused._tag, "ObligationsOutstanding")
          yield* store.setDeadlineState(a, "reply", "met")
          yield* store.setStatus(a, "closed")
          assert.strictEqual((yield* read(a)).status, "closed")
          assert.deepStrictEqual(yield* store.correlate([key("doc", "1")]), Option.none())
        }),
      ))

    test("a missing case is NotFound", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* CaseStore
          const missing = generateCaseId()
          assertError(yield* Effect.flip(store.setStatus(missing, "escalated")), new NotFound({ what: missing }))
          assertError(yield* Effect.flip(store.setStatus(missing, "closed")), new NotFound({ what: missing }))
        }),
      ))
  })
}
