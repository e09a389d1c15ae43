/**
 * Everything a tenant has in the stores, as sorted lines, so a test can assert that an operation
 * (a Strict replay) wrote nothing at all. On a database every table is listed from the catalog,
 * so a table added later cannot be missed; in memory every read the stores offer is taken.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { CaseStatus } from "../../src/domain/Case.js"
import type { CaseId, RunId } from "../../src/domain/Ids.js"
import { RunOutcome } from "../../src/domain/Journal.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import type * as Backend from "../support/Backend.js"

/** What a memory snapshot reads by id: the runs and cases the test made. */
export interface Subjects {
  readonly runs: ReadonlyArray<RunId>
  readonly cases: ReadonlyArray<CaseId>
}

/** The tenant's rows in every table (a database), or every read of its subjects (memory). */
export const of = (backend: Backend.Backend, subjects: Subjects): Effect.Effect<ReadonlyArray<string>, never, Tenant> =>
  Option.match(backend.sql, {
    onSome: (sql) => Effect.orDie(Effect.provide(tables, sql.layer)),
    onNone: () => Effect.orDie(Effect.provide(reads(subjects), backend.layer)),
  })

// internal

const line = (what: string, value: unknown): string =>
  `${what} ${JSON.stringify(value, (_key, v) =>
    v instanceof Uint8Array ? Buffer.from(v).toString("hex") : typeof v === "bigint" ? v.toString() : v,
  )}`

/** Every table of the schema; rows of the tenant where the table has a tenant column, all rows otherwise. */
const tables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tenant = yield* Tenant
  const names = yield* sql.onDialectOrElse({
    pg: () => sql<{ name: string }>`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()`,
    sqlite: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`,
    orElse: () => Effect.dieMessage("a snapshot knows the catalogs of PostgreSQL and SQLite only"),
  })
  const out: Array<string> = []
  for (const { name } of names) {
    const columns = yield* sql.onDialectOrElse({
      pg: () => sql<{ name: string }>`
        SELECT column_name AS name FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = ${name}`,
      sqlite: () => sql<{ name: string }>`SELECT name FROM pragma_table_info(${name})`,
      orElse: () => Effect.dieMessage("unreachable"),
    })
    const scoped = columns.some((c) => c.name === "tenant")
    const rows = scoped
      ? yield* sql`SELECT * FROM ${sql(name)} WHERE tenant = ${tenant}`
      : yield* sql`SELECT * FROM ${sql(name)}`
    out.push(line(`${name} rows`, rows.length))
    for (const row of rows) out.push(line(name, row))
  }
  return out.sort()
})

/** Every read the stores offer about the subjects, and every tenant-wide listing. */
const reads = (subjects: Subjects) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const quotas = yield* QuotaStore
    const timers = yield* TimerStore
    const tasks = yield* TaskStore
    const events = yield* EventStore
    const out: Array<string> = []
    for (const run of subjects.runs) {
      out.push(
        line(
          `journal ${run}`,
          (yield* journal.read(run, 1)).map((r) => [r.seq, r.kind, r.hash]),
        ),
      )
      out.push(line(`head ${run}`, yield* journal.head(run)))
      out.push(line(`cancellation ${run}`, yield* journal.cancellation(run)))
    }
    for (const outcome of RunOutcome.literals) {
      out.push(line(`outcome ${outcome}`, yield* journal.runsByOutcome(outcome, 10_000)))
    }
    out.push(line("recent", yield* journal.recentRuns(Option.none(), 10_000)))
    out.push(line("abandoned", yield* journal.abandonedRuns(10_000)))
    for (const kase of subjects.cases) {
      out.push(line(`case ${kase}`, yield* cases.case(kase)))
      out.push(line(`deadlines ${kase}`, yield* cases.deadlines(kase)))
      out.push(line(`blobs ${kase}`, yield* cases.blobsOf(kase)))
      out.push(
        line(
          `history ${kase}`,
          (yield* journal.caseHistory(kase, 10_000)).map((r) => [r.run, r.seq]),
        ),
      )
      out.push(line(`tasks ${kase}`, yield* tasks.forCase(kase)))
    }
    out.push(line("cases", yield* cases.cases(Option.none(), 10_000)))
    for (const status of CaseStatus.literals) out.push(line(`status ${status}`, yield* cases.byStatus(status, 10_000)))
    out.push(line("due", yield* cases.due(Number.MAX_SAFE_INTEGER as never, 10_000)))
    out.push(line("breached", yield* cases.breached(10_000)))
    out.push(line("running", yield* quotas.running()))
    out.push(line("halted", yield* quotas.halted()))
    out.push(line("timers", yield* timers.pending(10_000)))
    out.push(line("open tasks", yield* tasks.openCount()))
    out.push(line("waiting", yield* events.waiting(10_000)))
    out.push(line("dead letters", yield* events.deadLetters(10_000)))
    return out
  })
