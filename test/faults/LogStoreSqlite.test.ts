/**
 * Fault injection on LogStore integration, SQLite: a statement of `LogStore.integrate` fails at
 * each of its writes, and the log must be exactly as before, then integrate every leaf once.
 *
 * SQLite has no backend to kill (test/faults/LogStoreKill.test.ts kills the process instead), so
 * the cut is a throwaway trigger on the table written, scoped to the test's own tenant (and
 * optionally one row, `NEW.level = 1`), that raises. Each cut is run under the three ways a
 * trigger can raise, since they leave the transaction differently:
 * - `ABORT`: the statement is undone, the transaction (the group commit's savepoint) stays open;
 * - `FAIL`: the rows the statement wrote before the raise stay, so only the savepoint's
 *   ROLLBACK TO removes them (an AFTER trigger on a later row of a multi-row insert shows it);
 * - `ROLLBACK`: SQLite rolls the whole shared transaction back itself, and the savepoint is gone.
 * The size's compare-and-set is an upsert, so a later integration fires both the INSERT and the
 * UPDATE triggers on `log_tree`. No cut lands inside COMMIT (SQLite has no deferred triggers);
 * the kill test covers a loss there.
 *
 * Proven for each cut: the integration fails with `Backend`; the tenant's `log_tree`,
 * `log_node` and `log_checkpoint` rows and its latest checkpoint are what they were; once the
 * trigger is gone, one integration takes in every waiting leaf, each once at its seal position
 * (`LogChecks.assertExactlyOnce`: root, inclusion proofs, consistency), and a new seal goes in
 * at the next position.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { Tenant } from "../../src/domain/Tenant.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { assertIncluded, NOW, type Sealed, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { assertExactlyOnce, keyOf } from "./LogChecks.js"

type Raise = "ABORT" | "FAIL" | "ROLLBACK"
const RAISES: ReadonlyArray<Raise> = ["ABORT", "FAIL", "ROLLBACK"]

interface Cut {
  readonly timing: "BEFORE" | "AFTER"
  readonly event: "INSERT" | "UPDATE"
  readonly table: "log_tree" | "log_node" | "log_checkpoint"
  /** A further condition on `NEW`, to cut between the rows of one statement. */
  readonly row?: string
}

const label = (c: Cut) => `${c.timing.toLowerCase()} ${c.event} ${c.table}${c.row === undefined ? "" : ` (${c.row})`}`

/** The writes of an integration, in statement order; `row` cuts inside the subtrees' multi-row insert. */
const cuts = (first: boolean): ReadonlyArray<Cut> => [
  { timing: "BEFORE", event: "INSERT", table: "log_tree" },
  ...(first
    ? [{ timing: "AFTER", event: "INSERT", table: "log_tree" } as const]
    : [
        { timing: "BEFORE", event: "UPDATE", table: "log_tree" } as const,
        { timing: "AFTER", event: "UPDATE", table: "log_tree" } as const,
      ]),
  { timing: "BEFORE", event: "INSERT", table: "log_node" },
  { timing: "BEFORE", event: "INSERT", table: "log_node", row: "NEW.level = 1" },
  { timing: "AFTER", event: "INSERT", table: "log_node", row: "NEW.level = 1" },
  { timing: "AFTER", event: "INSERT", table: "log_node", row: "NEW.level = 2" },
  { timing: "BEFORE", event: "INSERT", table: "log_checkpoint" },
  { timing: "AFTER", event: "INSERT", table: "log_checkpoint" },
]

/** Every row the log keeps for the tenant, as text: what a failed integration must leave as it was. */
const rows = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tenant = yield* Tenant
  const tree = yield* sql`SELECT size FROM log_tree WHERE tenant = ${tenant}`
  const nodes =
    yield* sql`SELECT level, idx, hex(hash) AS hash FROM log_node WHERE tenant = ${tenant} ORDER BY level, idx`
  const checkpoints =
    yield* sql`SELECT size, hex(root) AS root, note, signed_at FROM log_checkpoint WHERE tenant = ${tenant} ORDER BY size`
  return { tree, nodes, checkpoints }
}).pipe(Effect.orDie)

/** Runs `op` with a trigger raising at `cut` for the tenant's rows; the trigger is dropped whatever happens. */
const withFault = <A, E, R>(cut: Cut, raise: Raise, op: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const tenant = yield* Tenant
    const name = `fault_${randomBytes(6).toString("hex")}`
    const when = `NEW.tenant = '${tenant.replaceAll("'", "''")}'${cut.row === undefined ? "" : ` AND (${cut.row})`}`
    return yield* Effect.acquireUseRelease(
      sql
        .unsafe(
          `CREATE TRIGGER ${name} ${cut.timing} ${cut.event} ON ${cut.table} FOR EACH ROW WHEN ${when}
           BEGIN SELECT RAISE(${raise}, '${name}'); END`,
        )
        .pipe(Effect.orDie),
      () => Effect.exit(op),
      () => Effect.orDie(sql.unsafe(`DROP TRIGGER IF EXISTS ${name}`)),
    ).pipe(Effect.map((exit) => ({ exit, name })))
  })

/** `before` runs sealed and integrated (in batches of two, so there are several checkpoints), then `after` sealed and waiting; one integration is cut. */
const check = (before: number, after: number, cut: Cut, raise: Raise) =>
  Backend.asFreshTenant(
    Effect.gen(function* () {
      const store = yield* JournalStore
      const log = yield* LogStore
      const key = keyOf(randomBytes(32))
      const runs: Array<Sealed> = []
      for (let i = 0; i < before; i++) runs.push(yield* sealed(store, i))
      while ((yield* log.integrate(key, NOW, 2)).leaves > 0) {}
      for (let i = before; i < before + after; i++) runs.push(yield* sealed(store, i))
      const rowsBefore = yield* rows
      const latestBefore = yield* log.checkpoint()

      const { exit, name } = yield* withFault(cut, raise, log.integrate(key, NOW, 100))
      const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(failure?._tag, "Backend", `the cut integration must fail with Backend, got ${String(exit)}`)
      // Every raise answers with the trigger's own message: after ROLLBACK too, where the
      // savepoint went with the transaction, the statement's own cause is the answer.
      if (failure?._tag === "Backend") assert.isTrue(failure.detail.includes(name), failure.detail)
      assert.deepStrictEqual(yield* rows, rowsBefore, "the failed integration left rows behind")
      assert.deepStrictEqual(yield* log.checkpoint(), latestBefore, "the latest checkpoint moved")

      assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: after, size: before + after })
      yield* assertExactlyOnce(runs)
      const extra = yield* sealed(store, before + after)
      assert.deepStrictEqual(yield* log.integrate(key, NOW, 100), { leaves: 1, size: before + after + 1 })
      const cp = Option.getOrThrow(yield* assertExactlyOnce([...runs, extra]))
      yield* assertIncluded(extra, before + after, cp)
    }),
  )

const scenarios = [
  { name: "the first integration of five sealed runs", before: 0, after: 5, first: true },
  { name: "a later integration of six more onto five", before: 5, after: 6, first: false },
]

describe("faults: LogStore on SQLite", () => {
  Backend.battery(Backend.sqlite(), (_, sql) => {
    const test = Option.getOrThrow(sql)
    for (const s of scenarios)
      describe(s.name, () => {
        for (const cut of cuts(s.first))
          for (const raise of RAISES)
            test(`a RAISE(${raise}) ${label(cut)} stores nothing, and the retry integrates each leaf once`, () =>
              check(s.before, s.after, cut, raise))
      })
  })
})
