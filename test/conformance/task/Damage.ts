/**
 * G3: nothing is invented on read. The only TaskStore tests that write rows with raw SQL: the
 * damage they plant cannot be made through the store.
 */
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import { generateRunId } from "../../../src/domain/Ids.js"
import type { TaskId } from "../../../src/domain/TaskId.js"
import { Tenant, type TenantId } from "../../../src/domain/Tenant.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant, type SqlTester } from "../../support/Backend.js"
import { at, taskId } from "./Fixtures.js"

interface Row {
  readonly id?: string
  readonly priority?: string
  readonly state?: string
  readonly onExpiry?: string
  readonly justification?: string
}

/** Plants one raw task row; the empty list literal differs because pg stores TEXT[] and sqlite JSON text. */
const plant = (sql: SqlClient.SqlClient, tenant: TenantId, row: Row) => {
  const empty = sql.literal(sql.onDialectOrElse({ pg: () => "'{}'", orElse: () => "'[]'" }))
  const justification =
    row.justification ?? '{"summary":"s","proposedAction":null,"confidence":null,"cost":null,"evidence":[]}'
  return sql`
    INSERT INTO tasks (tenant, task_id, run_id, case_id, kind, justification, candidate_roles, escalate_to,
                       excluded_actors, assignee, priority, state, on_expiry, created_at, due_at)
    VALUES (${tenant}, ${row.id ?? taskId()}, ${generateRunId()}, NULL, ${"k"}, ${justification}, ${empty}, ${empty},
            ${empty}, NULL, ${row.priority ?? "normal"}, ${row.state ?? "open"}, ${row.onExpiry ?? "deny"}, 1, 1)`
}

/** Plants `row` in a fresh tenant; then each of `reads` (given the row's id) must fail with `Corrupt`. */
const corrupt = (
  row: Row,
  reads: ReadonlyArray<(store: typeof TaskStore.Service, id: TaskId) => Effect.Effect<unknown, unknown, Tenant>>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* TaskStore
    const tenant = freshTenant()
    const id = taskId()
    yield* plant(sql, tenant, { id, ...row }).pipe(Effect.orDie)
    for (const read of reads) {
      const error = yield* Effect.flip(read(store, id)).pipe(Effect.provideService(Tenant, tenant))
      assert.strictEqual((error as { _tag?: string })._tag, "Corrupt", `expected Corrupt, got ${String(error)}`)
    }
  })

export const damage = (test: SqlTester) => {
  describe("damage reads as Corrupt", () => {
    test("an unknown state, on read and on claim", () =>
      corrupt({ state: "snoozed" }, [(s, id) => s.task(id), (s, id) => s.claim(id, "rita", [])]))
    test("an unknown priority, on read and in the queue", () =>
      corrupt({ priority: "critical" }, [(s, id) => s.task(id), (s) => s.queue([], 10)]))
    test("an unknown on_expiry policy, on read and on escalate", () =>
      corrupt({ onExpiry: "ignore" }, [(s, id) => s.task(id), (s, id) => s.escalate(id)]))
    test("unparsable justification JSON", () =>
      corrupt({ justification: "{not json" }, [(s, id) => s.task(id), (s) => s.overdue(at(1), 10)]))
    test("a task id that is not 64 hex digits", () => corrupt({ id: "task_garbage" }, [(s) => s.queue([], 10)]))
  })
}
