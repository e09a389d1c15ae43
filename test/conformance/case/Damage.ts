/**
 * G3: nothing is invented on read. These are the only tests that write rows with raw SQL: the
 * damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { Tenant, type TenantId } from "../../../src/domain/Tenant.js"
import { CaseStore } from "../../../src/services/CaseStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type SqlTester } from "../../support/Backend.js"
import { deadline, key, open } from "./Fixtures.js"

/** Runs `plant` (raw SQL) and then `read` as one fresh tenant; `read` must fail with `Corrupt`. */
const corrupt = <A, E, R>(
  plant: (sql: SqlClient.SqlClient, tenant: TenantId) => Effect.Effect<unknown, unknown, R>,
  read: Effect.Effect<A, E, R | Tenant>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tenant = freshTenant()
    yield* plant(sql, tenant).pipe(Effect.orDie)
    const error = yield* Effect.flip(read).pipe(Effect.provideService(Tenant, tenant))
    assert.strictEqual((error as { _tag?: string })._tag, "Corrupt", `expected Corrupt, got ${String(error)}`)
  })

const caseRow = (sql: SqlClient.SqlClient, tenant: TenantId, id: string, status = "open", state = "null") =>
  sql`INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at)
      VALUES (${tenant}, ${id}, ${"claim"}, ${status}, ${state}, 0, 1)`

export const damage = (test: SqlTester) => {
  describe("damage reads as Corrupt", () => {
    test("an unknown case status", () => {
      const id = generateCaseId()
      return corrupt(
        (sql, t) => caseRow(sql, t, id, "reopened"),
        Effect.flatMap(CaseStore, (s) => s.case(id)),
      )
    })

    test("unparsable state JSON", () => {
      const id = generateCaseId()
      return corrupt(
        (sql, t) => caseRow(sql, t, id, "open", "{not json"),
        Effect.flatMap(CaseStore, (s) => s.case(id)),
      )
    })

    test("a case id that does not parse, in the export pager", () =>
      corrupt(
        (sql, t) => caseRow(sql, t, "case_not-a-ulid"),
        Effect.flatMap(CaseStore, (s) => s.cases(Option.none(), 10)),
      ))

    test("a run id that does not parse", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tenant = freshTenant()
        const id = yield* open([key("doc", "1")]).pipe(Effect.provideService(Tenant, tenant))
        yield* sql`INSERT INTO case_runs (tenant, case_id, run_id, seq) VALUES (${tenant}, ${id}, ${"run_garbage"}, 0)`
        const error = yield* Effect.flip(Effect.flatMap(CaseStore, (s) => s.case(id))).pipe(
          Effect.provideService(Tenant, tenant),
        )
        assert.strictEqual(error._tag, "Corrupt")
      }))

    test("an unknown deadline state", () => {
      const id = generateCaseId()
      return corrupt(
        (sql, t) =>
          Effect.zipRight(
            caseRow(sql, t, id),
            sql`INSERT INTO case_deadlines (tenant, case_id, name, resolved_at, calendar_digest, warn_at, state)
                VALUES (${t}, ${id}, ${"reply"}, 10, ${Buffer.alloc(32)}, NULL, ${"overdue"})`,
          ),
        Effect.flatMap(CaseStore, (s) => s.deadlines(id)),
      )
    })

    test("a calendar digest that is not 32 bytes", () => {
      const id = generateCaseId()
      return corrupt(
        (sql, t) =>
          Effect.zipRight(
            caseRow(sql, t, id),
            sql`INSERT INTO case_deadlines (tenant, case_id, name, resolved_at, calendar_digest, warn_at, state)
                VALUES (${t}, ${id}, ${"reply"}, 10, ${Buffer.alloc(33)}, NULL, ${"pending"})`,
          ),
        Effect.flatMap(CaseStore, (s) => s.due(deadline(id, "x", 10).resolvedAt, 10)),
      )
    })

    test("a blob digest that is not 32 bytes", () => {
      const id = generateCaseId()
      return corrupt(
        (sql, t) =>
          Effect.zipRight(
            caseRow(sql, t, id),
            sql`INSERT INTO case_blobs (tenant, case_id, digest, written_at) VALUES (${t}, ${id}, ${Buffer.alloc(31)}, 1)`,
          ),
        Effect.flatMap(CaseStore, (s) => s.blobsOf(id)),
      )
    })

    test("damage in one tenant does not reach another's reads", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const damaged = freshTenant()
        yield* caseRow(sql, damaged, generateCaseId(), "reopened")
        const clean = freshTenant()
        const id = yield* open([key("doc", "1")]).pipe(Effect.provideService(Tenant, clean))
        const listed = yield* Effect.flatMap(CaseStore, (s) => s.cases(Option.none(), 10)).pipe(
          Effect.provideService(Tenant, clean),
        )
        assert.deepStrictEqual(
          listed.map((c) => c.id),
          [id],
        )
        void generateRunId
      }))
  })
}
