/**
 * Fault injection on PostgreSQL: the backend connection of a store operation is terminated
 * (`pg_terminate_backend`) between two of its statements, and the operation must then be all or
 * nothing. PostgreSQL only by nature: the cut is a trigger, and SQLite has no backend to kill.
 *
 * A cut is a throwaway PL/pgSQL trigger on the table the operation writes, scoped to the test's
 * own tenant (and optionally one row), so no other test's rows can fire it:
 * - `before`: a BEFORE ROW trigger, so the statements before this write have run and this one
 *   has not written (or, with a row condition, has written its earlier rows only);
 * - `after`: an AFTER ROW trigger, which fires at the end of the statement: every row of it is
 *   written, but the client never hears back;
 * - `commit`: a deferred constraint trigger, which fires inside COMMIT: every statement ran and
 *   the commit's outcome never reaches the client.
 *
 * The trigger records its backend's pid in a sequence of its own (sequences are not
 * transactional, so the record survives the rollback) and then either terminates itself
 * (`self`; PL/pgSQL checks for interrupts at once, so nothing after the PERFORM runs) or parks
 * until a peer connection, which polls that sequence, terminates it (`peer`: a loss seen from
 * outside, as a failed server or network would cause). A test then proves the kill landed where
 * intended: the trigger fired, its backend is gone, and the operation failed with `Backend`
 * rather than crashing or hanging.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, type Vitest } from "@effect/vitest"
import { Cause, Effect, Exit, FastCheck, Fiber, Layer, Option, Schedule } from "effect"
import { Tenant } from "../../src/domain/Tenant.js"
import * as Driver from "../../src/layers/internal/Driver.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { assert } from "./Assert.js"
import { asFreshTenant, type Services as StoreServices } from "./Backend.js"

export type Killer = "self" | "peer"
export const killers: ReadonlyArray<Killer> = ["self", "peer"]

type Write = "INSERT" | "UPDATE" | "DELETE"

export interface Cut {
  readonly label: string
  readonly timing: "before" | "after" | "commit"
  readonly table: string
  readonly event: Write
  /** A further condition on the row (`NEW` or `OLD`), to cut between the rows of one statement. */
  readonly row?: string
}

const describeCut = (timing: string, table: string, event: Write, row?: string) =>
  `${timing} ${event} ${table}${row === undefined ? "" : ` (${row})`}`

/** Cut before the row is written: earlier statements (and earlier rows of this one) have run. */
export const before = (table: string, event: Write, row?: string): Cut => ({
  label: describeCut("before", table, event, row),
  timing: "before",
  table,
  event,
  ...(row === undefined ? {} : { row }),
})

/** Cut at the end of the statement that wrote the row, before its result reaches the client. */
export const after = (table: string, event: Write, row?: string): Cut => ({
  label: describeCut("after", table, event, row),
  timing: "after",
  table,
  event,
  ...(row === undefined ? {} : { row }),
})

/** Cut inside COMMIT (a deferred trigger on a row the operation wrote): the commit's outcome is lost. */
export const atCommit = (table: string, event: Write): Cut => ({
  label: `at COMMIT after ${event} ${table}`,
  timing: "commit",
  table,
  event,
})

/**
 * The stores on a small pool of their own, migrated, plus the raw client the faults are installed
 * with. The client is the product's own (`PgBackend.layerClient`), so the faults test what users run.
 */
export const layer = (url: string): Layer.Layer<Services, unknown> =>
  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(
    Layer.provideMerge(PgBackend.layerClient({ url, maxConnections: POOL })),
  )

/** The stores and the raw client the faults are installed with. */
export type Services = StoreServices | Driver.Driver

export type Env = Services | Tenant

/** One operation under test: `make` draws its ids, so the control and the faulted tenant hold the same rows. */
export interface Scenario {
  readonly name: string
  /** Every cut point of the operation, in statement order. */
  readonly cuts: ReadonlyArray<Cut>
  readonly make: () => Instance<unknown>
}

export interface Instance<S> {
  /** Seeds the tenant through the stores. */
  readonly setup: Effect.Effect<S, unknown, Env>
  /** The operation; run once under the fault, then twice healthy (retry, then repeat). */
  readonly run: (s: S) => Effect.Effect<unknown, unknown, Env>
  /** What the stores show of the operation (read-only); compared before and after the fault. */
  readonly observe: (s: S) => Effect.Effect<unknown, unknown, Env>
  /** Run last: shows the result is usable (the wait is reachable by every key, the quota still binds). */
  readonly probe?: (s: S) => Effect.Effect<unknown, unknown, Env>
  /** Answer fields that come from the backend's clock and so differ between two honest runs. */
  readonly volatile?: ReadonlyArray<string>
}

export const scenario = <S>(name: string, cuts: ReadonlyArray<Cut>, make: () => Instance<S>): Scenario => ({
  name,
  cuts,
  make: make as unknown as () => Instance<unknown>,
})

/**
 * Runs `op` with the connection killed at `cut`: installs the trigger, runs the operation, drops
 * the trigger, and proves the fault landed. Returns the `Backend` error the operation failed with.
 */
export const inject = <A, E, R>(cut: Cut, killer: Killer, op: Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const tenant = yield* Tenant
      const name = `fault_${randomBytes(6).toString("hex")}`
      const victim = sql`SELECT last_value, is_called FROM ${sql.literal(name)}`.pipe(
        Effect.map(([row]) => (row?.is_called === true ? Option.some(Number(row.last_value)) : Option.none<number>())),
        Effect.orDie,
      )
      yield* Effect.acquireRelease(
        Effect.orDie(
          Effect.gen(function* () {
            yield* sql.unsafe(`CREATE SEQUENCE ${name}`)
            yield* sql.unsafe(functionText(name, killer))
            yield* sql.unsafe(triggerText(name, cut, tenant))
          }),
        ),
        () =>
          Effect.orDie(
            Effect.gen(function* () {
              yield* sql.unsafe(`DROP TRIGGER IF EXISTS ${name} ON ${cut.table}`)
              yield* sql.unsafe(`DROP FUNCTION IF EXISTS ${name}()`)
              yield* sql.unsafe(`DROP SEQUENCE IF EXISTS ${name}`)
            }),
          ),
      )
      if (killer === "peer") {
        // The peer waits for the trigger to name its backend, then terminates it from outside.
        yield* Effect.forkScoped(
          victim.pipe(
            Effect.delay("10 millis"),
            Effect.repeat({ until: Option.isSome }),
            Effect.flatMap((pid) => sql`SELECT pg_terminate_backend(${Option.getOrThrow(pid)})`),
            Effect.orDie,
          ),
        )
      }
      const exit = yield* Effect.exit(Effect.timeout(op, HANG))
      const pid = yield* victim
      if (Option.isNone(pid)) return assert.fail(`${cut.label}: the cut never fired (${show(exit)})`)
      yield* gone(pid.value)
      const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
      if (Exit.isSuccess(exit) || Cause.isDie(exit.cause) || Option.isNone(failure)) {
        return assert.fail(`${cut.label}: the operation must fail with Backend, got ${show(exit)}`)
      }
      const tag = (failure.value as { _tag?: unknown })._tag
      if (tag !== "Backend") return assert.fail(`${cut.label}: expected Backend, got ${show(exit)}`)
      // The pool must have dropped the dead connection: every connection it now hands out works.
      yield* Effect.all(
        Array.from({ length: POOL }, () =>
          sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Effect.sleep("5 millis"))),
        ),
        { concurrency: "unbounded", discard: true },
      ).pipe(Effect.orDie)
      return failure.value
    }),
  )

/**
 * The whole check for one scenario: a control tenant runs the operation healthy; a second tenant
 * with the same seed runs it under each fault in turn, must show after each exactly what it
 * showed before (through the stores and row by row), and then, retried and repeated on a
 * healthy connection, must answer and store exactly what the control did.
 */
export const check = (
  s: Scenario,
  faults: ReadonlyArray<readonly [Cut, Killer]>,
  around: <A, E, R>(op: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | Driver.Driver> = (op) => op,
) =>
  Effect.gen(function* () {
    const instance = s.make()
    const volatile = instance.volatile ?? []
    const answer = <A, E, R>(op: Effect.Effect<A, E, R>) =>
      Effect.match(op, {
        onFailure: (e) => ({ failed: plain(e, volatile) }),
        onSuccess: (a) => ({ succeeded: plain(a, volatile) }),
      })
    const healthy = (seed: unknown) =>
      Effect.gen(function* () {
        const retried = yield* answer(instance.run(seed))
        const repeated = yield* answer(instance.run(seed))
        const seen = plain(yield* instance.observe(seed), volatile)
        const rows = normalise(yield* dump)
        const probed = instance.probe === undefined ? null : yield* answer(instance.probe(seed))
        return { retried, repeated, seen, rows, probed }
      })

    const control = yield* asFreshTenant(Effect.flatMap(instance.setup, healthy))

    yield* asFreshTenant(
      Effect.gen(function* () {
        const seed = yield* instance.setup
        const seenBefore = plain(yield* instance.observe(seed), volatile)
        const rowsBefore = yield* dump
        for (const [cut, killer] of faults) {
          const where = `${cut.label} (${killer} kill)`
          yield* inject(cut, killer, around(instance.run(seed)))
          assert.deepStrictEqual(yield* dump, rowsBefore, `${where}: the failed operation left rows behind`)
          assert.deepStrictEqual(
            plain(yield* instance.observe(seed), volatile),
            seenBefore,
            `${where}: the stores show part of the failed operation`,
          )
        }
        const after = yield* healthy(seed)
        assert.deepStrictEqual(after.retried, control.retried, "the retry answered otherwise than a healthy run")
        assert.deepStrictEqual(after.repeated, control.repeated, "the repeat answered otherwise than a healthy run")
        assert.deepStrictEqual(after.seen, control.seen, "the stores show another result than a healthy run")
        assert.deepStrictEqual(after.rows, control.rows, "the stored rows differ from a healthy run")
        assert.deepStrictEqual(after.probed, control.probed, "the result is not usable as a healthy one")
      }),
    )
  })

/**
 * The fault battery for `scenarios`: every cut of every operation under each killer, then a
 * property of several faults in a row (random cuts, random killers) before the healthy retry.
 */
export const exercise = (
  test: Vitest.Tester<Services>,
  scenarios: ReadonlyArray<Scenario>,
  around?: <A, E, R>(op: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | Driver.Driver>,
) => {
  for (const s of scenarios) {
    describe(s.name, () => {
      for (const cut of s.cuts) {
        for (const killer of killers) {
          test(`all or nothing when killed ${cut.label} (${killer})`, () => check(s, [[cut, killer]], around))
        }
      }
    })
  }
  const fault = (s: Scenario) => FastCheck.tuple(FastCheck.constantFrom(...s.cuts), FastCheck.constantFrom(...killers))
  const draw = FastCheck.constantFrom(...scenarios).chain((s) =>
    FastCheck.tuple(FastCheck.constant(s), FastCheck.array(fault(s), { minLength: 1, maxLength: 3 })),
  )
  test.prop(
    "any operation killed at any cuts, several times, then retried, ends as a healthy run",
    [draw],
    ([[s, faults]]) => check(s, faults, around),
    { timeout: 120_000, fastCheck: { numRuns: PROPERTY_RUNS } },
  )
}

/**
 * `op` sent in company (PostgreSQL's shared sends, `SharedCommit`): both places on the wire are
 * held by sleeping statements, a companion statement waits, and `op`'s autocommitted statement
 * then waits too, so the two go to the server as one shared send. The companion must fail with
 * `op` when the cut kills the session: proof that they shared it, and that a lost shared send
 * answers every member with its failure.
 */
export const inCompany = <A, E, R>(op: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Driver.Driver> =>
  Effect.gen(function* () {
    const driver = yield* Driver.Driver
    const holders = yield* Effect.forEach([1, 2], () => Effect.fork(driver.run("SELECT pg_sleep(0.3)", [], false)))
    yield* Effect.yieldNow()
    const companion = yield* Effect.fork(driver.run("SELECT 1 AS one", [], false))
    yield* Effect.yieldNow()
    const exit = yield* Effect.exit(op)
    const shared = yield* Fiber.await(companion)
    yield* Effect.forEach(holders, Fiber.await, { discard: true })
    if (Exit.isFailure(exit) && Exit.isSuccess(shared)) {
      assert.fail("the operation failed but its companion did not: they were not sent together")
    }
    return yield* exit
  })

/** Every row of the tenant in every table that has a tenant column, as JSON, grouped by table. */
export const dump = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tenant = yield* Tenant
  const tables = yield* sql<{ table_name: string }>`
    SELECT table_name FROM information_schema.columns
     WHERE column_name = 'tenant' AND table_schema = current_schema()
     ORDER BY table_name`
  // One statement, so the dump is one snapshot; table names come from the catalogue, the tenant is bound.
  const rows = yield* sql.unsafe<{ t: string; r: string }>(
    tables
      .map(
        ({ table_name: t }) => `SELECT '${t}' AS t, (to_jsonb(x) - 'tenant')::text AS r FROM ${t} x WHERE tenant = $1`,
      )
      .join(" UNION ALL "),
    [tenant],
  )
  return rows.map(({ t, r }) => `${t} ${r}`).sort()
}).pipe(Effect.orDie)

// internal

/** A tenant no other test uses, so the triggers of one test can fire for its rows only. */

const POOL = 4

/** `AGENTPLANE_FAULT_RUNS` runs of the property per file (6 by default). */
const PROPERTY_RUNS = Number(process.env.AGENTPLANE_FAULT_RUNS ?? 6)

/** Longer than any healthy operation takes; a faulted one that has not failed by then hangs. */
const HANG = "20 seconds"

/** How long a parked backend waits for its peer before failing loudly instead of committing. */
const PEER_PATIENCE_SECS = 15

const functionText = (name: string, killer: Killer) => `
  CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM setval('${name}', pg_backend_pid());
    ${
      killer === "self"
        ? "PERFORM pg_terminate_backend(pg_backend_pid());"
        : `PERFORM pg_sleep(${PEER_PATIENCE_SECS});
           RAISE EXCEPTION 'fault ${name}: no peer terminated backend %', pg_backend_pid();`
    }
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
  END $$`

const triggerText = (name: string, cut: Cut, tenant: string) => {
  const row = cut.event === "DELETE" ? "OLD" : "NEW"
  const when = `${row}.tenant = '${tenant.replaceAll("'", "''")}'${cut.row === undefined ? "" : ` AND (${cut.row})`}`
  return cut.timing === "commit"
    ? `CREATE CONSTRAINT TRIGGER ${name} AFTER ${cut.event} ON ${cut.table}
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`
    : `CREATE TRIGGER ${name} ${cut.timing === "before" ? "BEFORE" : "AFTER"} ${cut.event} ON ${cut.table}
         FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`
}

/** Waits until the backend `pid` has left `pg_stat_activity`: the kill landed, not just the signal. */
const gone = (pid: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid}`.pipe(
      Effect.orDie,
      Effect.filterOrFail(
        ([row]) => row?.n === 0,
        () => `backend ${pid} is still alive`,
      ),
      Effect.retry({ times: 1_000, schedule: Schedule.spaced("10 millis") }),
      Effect.catchAll((message) => Effect.sync(() => assert.fail(message))),
    ),
  )

const show = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.isSuccess(exit) ? "success" : (Cause.pretty(exit.cause).split("\n")[0] ?? "failure")

/**
 * Columns written from the backend's clock or a global sequence: they differ between two honest
 * runs. A seal's `log_position` is not one of them: it is dense per tenant, so a fault that spent
 * a position shows. A checkpoint's `note` names the tenant in its origin line, so two tenants'
 * notes differ; its size and root are compared.
 */
const VOLATILE_COLUMNS = ["expires_at", "updated_at", "admitted_at", "sealed_at", "ordinal", "requested_at", "note"]

/** Case ids are generated by the store, so two tenants that opened the same case hold different ones. */
const CASE_ID = /case_[0-9A-HJKMNP-TV-Z]{26}/g

/** A dump made comparable across tenants; a quota admission time is the caller's, so it is kept there. */
const normalise = (rows: ReadonlyArray<string>): ReadonlyArray<string> =>
  rows
    .map((line) => {
      const space = line.indexOf(" ")
      const table = line.slice(0, space)
      const row = JSON.parse(line.slice(space + 1)) as Record<string, unknown>
      for (const column of VOLATILE_COLUMNS) {
        if (column in row && !(table === "quota_running" && column === "admitted_at")) row[column] = "*"
      }
      return `${table} ${JSON.stringify(row).replace(CASE_ID, "case_*")}`
    })
    .sort()

/**
 * An answer as plain data: Options and tagged values keep their tag, bytes become hex, generated
 * case ids and the `volatile` fields are masked; errors keep their tag and fields only.
 */
const plain = (value: unknown, volatile: ReadonlyArray<string>): unknown => {
  if (typeof value === "string") return value.replace(CASE_ID, "case_*")
  if (value === null || typeof value !== "object") return value
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex")
  if (Array.isArray(value)) return value.map((v) => plain(v, volatile))
  if (Option.isOption(value)) return Option.isSome(value) ? { some: plain(value.value, volatile) } : "none"
  const out: Record<string, unknown> = {}
  if ("_tag" in value) out._tag = (value as { _tag: unknown })._tag
  for (const [k, v] of Object.entries(value)) out[k] = volatile.includes(k) ? "*" : plain(v, volatile)
  return out
}
