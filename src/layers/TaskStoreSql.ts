/**
 * TaskStore over `SqlClient`: one implementation for PostgreSQL and SQLite. Every verb that reads
 * and writes runs on one connection (`Dialect.write`), and each race is settled by a guarded
 * `UPDATE … RETURNING`; the only dialect fragments are how a list of names is bound and matched.
 */
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Layer, Option, Schema } from "effect"
import { CaseId, RunId } from "../domain/Ids.js"
import * as Task from "../domain/Task.js"
import { TaskId } from "../domain/TaskId.js"
import { Tenant } from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import { AlreadyClaimed, Excluded, NotHeld, NotPending, TaskNotFound, WrongRole } from "../errors/ClaimError.js"
import { Backend, NotFound } from "../errors/StoreError.js"
import { TaskStore } from "../services/TaskStore.js"
import { Count, decodeRows, Int8 } from "./internal/Columns.js"
import * as Dialect from "./internal/Dialect.js"
import * as Sql from "./internal/Sql.js"

/** The queue rank, verbatim the expression of the `tasks_queue_rank` index: any other text and the index stops serving `queue`. */
export const RANK = "CASE priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END"

const COLUMNS =
  "task_id, run_id, case_id, kind, justification, candidate_roles, escalate_to, excluded_actors, assignee, priority, state, on_expiry, created_at, due_at"

/**
 * The one statement `queue` runs, exported so that a test can EXPLAIN exactly it. The role filter
 * sits in the WHERE clause, so the limit counts eligible tasks only.
 */
export const queueStatement = (sql: SqlClient.SqlClient, tenant: string, roles: ReadonlyArray<string>, limit: number) =>
  sql`
    SELECT ${sql.literal(COLUMNS)} FROM tasks
     WHERE tenant = ${tenant} AND state IN ('open', 'escalated') AND ${eligible(sql, roles)}
     ORDER BY ${sql.literal(RANK)}, created_at, task_id
     LIMIT ${limit}`

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make

  // internal: statements shared by several verbs

  /** The task's row on the connection the verb already holds (inside `dialect.write`, never a second one). */
  const readOne = (tenant: string, id: TaskId) =>
    sql`SELECT ${sql.literal(COLUMNS)} FROM tasks WHERE tenant = ${tenant} AND task_id = ${id}`.pipe(
      Effect.flatMap(decodeTasks),
      Effect.map((tasks) => Option.fromNullable(tasks[0])),
    )

  const selectTasks = (tenant: string, where: Fragment, order: string, limit: Option.Option<number>) =>
    sql`
      SELECT ${sql.literal(COLUMNS)} FROM tasks
       WHERE tenant = ${tenant} AND ${where}
       ORDER BY ${sql.literal(order)}
       ${Option.match(limit, { onNone: () => sql.literal(""), onSome: (n) => sql`LIMIT ${n}` })}`.pipe(
      Effect.flatMap(decodeTasks),
    )

  /**
   * Claim's whole success in one statement: the guarded update with `Task.mayDecide` written in
   * SQL beside the state/assignee guard, so it claims exactly when the transaction below would
   * (the same row version passing the same checks). pg: `= ANY` and `&&`; sqlite: json_each.
   * Only a refusal pays the transaction, which names it in the contract's order.
   */
  const claimAtOnce = dialect.query(TaskRow, "tasks", { named: true })(
    ...Dialect.parts([
      "UPDATE tasks SET assignee = ",
      2,
      " , state = 'claimed' WHERE tenant = ",
      0,
      " AND task_id = ",
      1,
      " AND ((state IN ('open', 'escalated') AND (assignee IS NULL OR assignee = ",
      2,
      ")) OR (state = 'claimed' AND assignee = ",
      2,
      ")) AND ",
      ...(dialect.name === "pg"
        ? [
            "NOT (",
            2,
            "::text = ANY (excluded_actors)) AND (cardinality(candidate_roles) = 0 OR candidate_roles && ",
            3,
            "::text[])",
          ]
        : [
            "NOT EXISTS (SELECT 1 FROM json_each(excluded_actors) WHERE value = ",
            2,
            ") AND (candidate_roles = '[]' OR EXISTS (SELECT 1 FROM json_each(candidate_roles) WHERE value IN (SELECT value FROM json_each(",
            3,
            "))))",
          ]),
      ` RETURNING ${COLUMNS}`,
    ]),
  )

  /** Claim's eligibility and availability checks on the row as read, in the contract's order. */
  const admissible = (task: Task.Task, actor: string, roles: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      // Four eyes first: whoever proposed the action hears "never", not "wait for the holder".
      if (task.excludedActors.includes(actor)) return yield* new Excluded({ actor })
      if (!Task.mayDecide(task, actor, roles)) return yield* new WrongRole({ actor })
      if (!Task.isPending(task.state)) return yield* new NotPending({ task: task.id, state: task.state })
    })

  /**
   * The claim that one statement refused, read and judged under the write lock. One connection
   * for the whole verb: a re-read through the pool while this one is held deadlocks a small pool
   * under exactly the many-reviewer race this verb exists for.
   */
  const refusedClaim = (tenant: string, id: TaskId, actor: string, roles: ReadonlyArray<string>) =>
    dialect.write(
      Effect.gen(function* () {
        const found = yield* readOne(tenant, id)
        if (Option.isNone(found)) return yield* new TaskNotFound({ task: id })
        yield* admissible(found.value, actor, roles)
        // The guard is the write: a claim or an expiry landing since the read above fails it. The
        // state arm keeps an expired task expired; the second arm is the holder's idempotent repeat.
        const [claimed] = yield* sql`
              UPDATE tasks SET assignee = ${actor}, state = 'claimed'
               WHERE tenant = ${tenant} AND task_id = ${id}
                 AND ((state IN ('open', 'escalated') AND (assignee IS NULL OR assignee = ${actor}))
                      OR (state = 'claimed' AND assignee = ${actor}))
              RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeTasks))
        if (claimed !== undefined) return claimed
        // Which guard refused, read on this same connection.
        const now = yield* readOne(tenant, id)
        if (Option.isNone(now)) return yield* new TaskNotFound({ task: id })
        if (!Task.isPending(now.value.state)) return yield* new NotPending({ task: id, state: now.value.state })
        return yield* new AlreadyClaimed({ task: id, holder: Option.getOrElse(now.value.assignee, () => "") })
      }),
    )

  return TaskStore.of({
    open: (task) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const justification = yield* encodeJustification(task.justification)
        return yield* dialect.write(
          Effect.gen(function* () {
            // The first task under an id stands: ids are derived, so a resumed run re-opens its own.
            yield* sql`
              INSERT INTO tasks (tenant, task_id, run_id, case_id, kind, justification, candidate_roles,
                                 escalate_to, excluded_actors, assignee, priority, state, on_expiry,
                                 created_at, due_at)
              VALUES (${tenant}, ${task.id}, ${task.run}, ${Option.getOrNull(task.case)}, ${task.kind},
                      ${justification}, ${names(sql, task.candidateRoles)}, ${names(sql, task.escalateTo)},
                      ${names(sql, task.excludedActors)}, ${Option.getOrNull(task.assignee)}, ${task.priority},
                      ${task.state}, ${task.onExpiry}, ${task.createdAt}, ${Option.getOrNull(task.dueAt)})
              ON CONFLICT (tenant, task_id) DO NOTHING`
            const stored = yield* readOne(tenant, task.id)
            if (Option.isNone(stored)) return yield* new Backend({ detail: `task ${task.id} vanished after insert` })
            return stored.value
          }),
        )
      }).pipe(Sql.orBackend),

    task: (id) =>
      Effect.gen(function* () {
        return yield* readOne(yield* Tenant, id)
      }).pipe(Sql.orBackend),

    claim: Sql.verb((tenant, id: TaskId, actor: string, roles: ReadonlyArray<string>) =>
      Effect.flatMap(
        claimAtOnce(tenant, id, actor, dialect.name === "pg" ? [...roles] : JSON.stringify(roles)),
        ([took]) => (took !== undefined ? Effect.succeed(toTask(took)) : refusedClaim(tenant, id, actor, roles)),
      ),
    ),

    release: (id, actor) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        yield* dialect.write(
          Effect.gen(function* () {
            // State `open` even for a task escalated before it was claimed: the holder hands it back.
            const freed = yield* sql`
              UPDATE tasks SET assignee = NULL, state = 'open'
               WHERE tenant = ${tenant} AND task_id = ${id} AND state = 'claimed' AND assignee = ${actor}
              RETURNING task_id`
            if (freed.length > 0) return
            const found = yield* sql`SELECT task_id FROM tasks WHERE tenant = ${tenant} AND task_id = ${id}`
            if (found.length === 0) return yield* new TaskNotFound({ task: id })
            return yield* new NotHeld({ task: id, actor })
          }),
        )
      }).pipe(Sql.orBackend),

    takeOver: (id, from, actor, roles) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* dialect.write(
          Effect.gen(function* () {
            const found = yield* readOne(tenant, id)
            if (Option.isNone(found)) return yield* new TaskNotFound({ task: id })
            // A take-over is a claim: four eyes does not thin because the last reviewer left.
            yield* admissible(found.value, actor, roles)
            // Compare-and-swap on the holder the caller saw, so a stale view never displaces the current one.
            const [taken] = yield* sql`
              UPDATE tasks SET assignee = ${actor}, state = 'claimed'
               WHERE tenant = ${tenant} AND task_id = ${id} AND state = 'claimed' AND assignee = ${from}
              RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeTasks))
            if (taken === undefined) return yield* new NotHeld({ task: id, actor: from })
            return taken
          }),
        )
      }).pipe(Sql.orBackend),

    setState: (id, state) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const written = yield* sql`
          UPDATE tasks SET state = ${state} WHERE tenant = ${tenant} AND task_id = ${id}
          RETURNING task_id`
        if (written.length === 0) return yield* new NotFound({ what: id })
      }).pipe(Sql.orBackend),

    escalate: (id) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* dialect.write(
          Effect.gen(function* () {
            const found = yield* readOne(tenant, id)
            if (Option.isNone(found)) return yield* new NotFound({ what: id })
            // The decision that won the race against the sweep stands.
            if (!Task.isPending(found.value.state)) return found.value
            const next = Task.escalate(found.value)
            // Guarded on pending: a decision landing since the read must not be re-opened as escalated.
            const [written] = yield* sql`
              UPDATE tasks SET state = 'escalated', assignee = NULL, candidate_roles = ${names(sql, next.candidateRoles)}
               WHERE tenant = ${tenant} AND task_id = ${id} AND state IN ('open', 'claimed', 'escalated')
              RETURNING ${sql.literal(COLUMNS)}`.pipe(Effect.flatMap(decodeTasks))
            if (written !== undefined) return written
            const now = yield* readOne(tenant, id)
            if (Option.isNone(now)) return yield* new NotFound({ what: id })
            return now.value
          }),
        )
      }).pipe(Sql.orBackend),

    queue: (roles, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        return yield* queueStatement(sql, tenant, roles, n).pipe(Effect.flatMap(decodeTasks))
      }).pipe(Sql.orBackend),

    forCase: (kase) =>
      Effect.gen(function* () {
        return yield* selectTasks(yield* Tenant, sql`case_id = ${kase}`, "created_at, task_id", Option.none())
      }).pipe(Sql.orBackend),

    openCount: () =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Counted in SQL, never from a limited list.
        const [row] = yield* sql`
          SELECT COUNT(*) AS n FROM tasks WHERE tenant = ${tenant} AND state IN ('open', 'claimed', 'escalated')`.pipe(
          Effect.flatMap(decodeRows(CountRow, "tasks")),
        )
        return row?.n ?? 0
      }).pipe(Sql.orBackend),

    overdue: (now, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        // Inclusive: a window closing this second is closed. Escalated tasks are out: their
        // expiry policy already ran, and listing them again would starve the sweep.
        return yield* selectTasks(
          tenant,
          sql`state IN ('open', 'claimed') AND due_at IS NOT NULL AND due_at <= ${now}`,
          "due_at, task_id",
          Option.some(n),
        )
      }).pipe(Sql.orBackend),
  })
})

/** TaskStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<TaskStore, never, SqlClient.SqlClient> = Layer.effect(TaskStore, make)

// internal

/** A list of names as a bind: pg binds a JS array as `text[]`; sqlite stores and matches JSON array text. */
const names = (sql: SqlClient.SqlClient, values: ReadonlyArray<string>) =>
  sql.onDialectOrElse({
    pg: () => sql`${[...values]}::text[]`,
    orElse: () => sql`${JSON.stringify(values)}`,
  })

/** Candidate roles empty or sharing one with `roles`, as §5.4 writes it per dialect: pg has array overlap, sqlite only json_each. */
const eligible = (sql: SqlClient.SqlClient, roles: ReadonlyArray<string>) =>
  sql.onDialectOrElse({
    pg: () => sql`(cardinality(candidate_roles) = 0 OR candidate_roles && ${[...roles]}::text[])`,
    orElse: () =>
      sql`(candidate_roles = '[]' OR EXISTS (SELECT 1 FROM json_each(candidate_roles) WHERE value IN (SELECT value FROM json_each(${JSON.stringify(roles)}))))`,
  })

/** TEXT[] (pg: an array) or JSON array text (sqlite): anything else is damage, never a split string. */
const Names = Schema.Union(Schema.Array(Schema.String), Schema.parseJson(Schema.Array(Schema.String)))

const JustificationText = Schema.parseJson(Task.Justification)

const TaskRow = Schema.Struct({
  task_id: TaskId,
  run_id: RunId,
  case_id: Schema.NullOr(CaseId),
  kind: Schema.String,
  justification: JustificationText,
  candidate_roles: Names,
  escalate_to: Names,
  excluded_actors: Names,
  assignee: Schema.NullOr(Schema.String),
  priority: Task.Priority,
  state: Task.TaskState,
  on_expiry: Task.OnExpiry,
  created_at: Schema.compose(Int8, Time.Timestamp),
  due_at: Schema.NullOr(Schema.compose(Int8, Time.Timestamp)),
})
const CountRow = Schema.Struct({ n: Count })

/**
 * Unvalidated construction: `TaskRow`'s decoder (built once) already checked every field against
 * the schema `Task` holds for it, and validating the class again per row cost as much as the rest
 * of the mapping.
 */
const toTask = (row: typeof TaskRow.Type): Task.Task =>
  new Task.Task(
    {
      id: row.task_id,
      run: row.run_id,
      case: Option.fromNullable(row.case_id),
      kind: row.kind,
      justification: row.justification,
      candidateRoles: row.candidate_roles,
      assignee: Option.fromNullable(row.assignee),
      priority: row.priority,
      state: row.state,
      onExpiry: row.on_expiry,
      escalateTo: row.escalate_to,
      excludedActors: row.excluded_actors,
      createdAt: row.created_at,
      dueAt: Option.fromNullable(row.due_at),
    },
    true,
  )

const decodeTasks = (rows: ReadonlyArray<unknown>) =>
  Effect.map(decodeRows(TaskRow, "tasks")(rows), (decoded) => decoded.map(toTask))

/** JSON text for a justification; one with no JSON form is a caller's bug, not data to store. */
const encodeJustification = (justification: Task.Justification) =>
  Effect.orDieWith(Schema.encode(JustificationText)(justification), (e) => `justification must be JSON: ${e.message}`)
