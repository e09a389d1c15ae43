/**
 * The worklist read: rank, age, roles before the limit, and the index that serves it.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Tenant } from "../../../src/domain/Tenant.js"
import * as PgMigration from "../../../src/layers/migrations/pg/0001_case_layer.js"
import * as SqliteMigration from "../../../src/layers/migrations/sqlite/0001_case_layer.js"
import * as TaskStoreSql from "../../../src/layers/TaskStoreSql.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Explain, freshTenant, type SqlTester } from "../../support/Backend.js"
import { ids, opened, type Tester } from "./Fixtures.js"

/** The raw-SQL tester and the planner, present where the backend has a planner worth asking. */
export type Planner = Option.Option<{ readonly test: SqlTester; readonly explain: Explain }>

export const queue = (test: Tester, planner: Planner) => {
  describe("queue", () => {
    test("open and escalated tasks by rank urgent, high, normal, low, then oldest, then id", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const lowOld = yield* opened({ priority: "low", createdAt: 1 })
        const normalNew = yield* opened({ priority: "normal", createdAt: 50 })
        const normalOld = yield* opened({ priority: "normal", createdAt: 10, state: "escalated" })
        const urgent = yield* opened({ priority: "urgent", createdAt: 99 })
        const tied = [
          yield* opened({ priority: "high", createdAt: 5 }),
          yield* opened({ priority: "high", createdAt: 5 }),
        ]
        const listed = yield* store.queue([], 10)
        assert.deepStrictEqual(ids(listed), [
          urgent.id,
          ...[...ids(tied)].sort(),
          normalOld.id,
          normalNew.id,
          lowOld.id,
        ])
      }).pipe(asFreshTenant))

    test("claimed, completed and expired tasks are absent", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const claimed = yield* opened()
        yield* store.claim(claimed.id, "rita", [])
        yield* opened({ state: "completed" })
        yield* opened({ state: "expired" })
        const open = yield* opened()
        assert.deepStrictEqual(ids(yield* store.queue([], 10)), [open.id])
      }).pipe(asFreshTenant))

    test("the role filter runs before the limit", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        for (let i = 0; i < 3; i++) yield* opened({ priority: "urgent", candidateRoles: ["legal"], createdAt: i })
        const mine = [
          yield* opened({ priority: "low", candidateRoles: ["ops"], createdAt: 1 }),
          yield* opened({ priority: "low", candidateRoles: [], createdAt: 2 }),
          yield* opened({ priority: "low", candidateRoles: ["finance", "ops"], createdAt: 3 }),
        ]
        assert.deepStrictEqual(ids(yield* store.queue(["ops"], 2)), ids(mine.slice(0, 2)))
        assert.deepStrictEqual(ids(yield* store.queue(["ops"], 10)), ids(mine))
      }).pipe(asFreshTenant))

    test("a task with no candidate roles is eligible for a caller with none", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const anyone = yield* opened()
        yield* opened({ candidateRoles: ["ops"] })
        assert.deepStrictEqual(ids(yield* store.queue([], 10)), [anyone.id])
      }).pipe(asFreshTenant))

    test("a role named with a comma matches only as a whole", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["risk,audit"] })
        assert.deepStrictEqual(yield* store.queue(["risk", "audit"], 10), [])
        assert.deepStrictEqual(ids(yield* store.queue(["risk,audit"], 10)), [t.id])
      }).pipe(asFreshTenant))

    test("a limit of 0 returns an empty list", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        yield* opened()
        assert.deepStrictEqual(yield* store.queue([], 0), [])
      }).pipe(asFreshTenant))

    test("the ORDER BY rank is character for character the tasks_queue_rank expression, in both migrations", () =>
      Effect.sync(() => {
        for (const statements of [PgMigration.statements, SqliteMigration.statements]) {
          const index = statements.find((s) => s.includes("INDEX IF NOT EXISTS tasks_queue_rank"))
          assert.isTrue(
            index?.includes(`(${TaskStoreSql.RANK}), created_at, task_id)`) ?? false,
            `index text: ${index}`,
          )
        }
      }))

    if (Option.isSome(planner)) {
      const { test: sqlTest, explain } = planner.value
      // Only where the backend has a planner to ask. The hard shape is a long pending backlog:
      // an index that only narrows to pending rows leaves a sort of all of them before the limit.
      sqlTest("the queue read walks tasks_queue_rank in order, with no sort, over a large pending backlog", () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const tenant = freshTenant()
          const priorities = ["low", "normal", "high", "urgent"] as const
          const seed = (i: number) =>
            opened({
              createdAt: i,
              priority: priorities[i % 4] ?? "low",
              state: i % 10 === 0 ? "escalated" : "open",
              candidateRoles: ["ops"],
            })
          yield* Effect.forEach(
            Array.from({ length: 1_000 }, (_, i) => i),
            seed,
            { concurrency: 4, discard: true },
          ).pipe(Effect.provideService(Tenant, tenant))
          yield* sql`ANALYZE tasks`
          const plan = yield* explain(TaskStoreSql.queueStatement(sql, tenant, ["ops"], 10))
          assert.match(plan, /tasks_queue_rank/, plan)
          assert.doesNotMatch(plan, /Sort/, plan)
          const listed = yield* Effect.flatMap(TaskStore, (s) => s.queue(["ops"], 10)).pipe(
            Effect.provideService(Tenant, tenant),
          )
          // The urgent ones (i % 4 == 3), oldest first.
          assert.deepStrictEqual(
            listed.map((t) => t.createdAt),
            Array.from({ length: 10 }, (_, i) => 4 * i + 3),
          )
        }),
      )
    }
  })
}
