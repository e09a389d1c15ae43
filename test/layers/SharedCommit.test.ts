/**
 * Commits shared across verbs on PostgreSQL (`SharedCommit`): statements that wait while the
 * wire is busy go together in one round trip and one transaction, each answered with its own
 * rows after the commit; a member the server refuses sends every member again alone, so the
 * others still commit and the refused one gets its own error; a lost session answers every
 * member with its failure and commits nothing; a member interrupted while it waits never runs;
 * and named statements bind by name in a shared send without disturbing the lone path.
 *
 * The driver runs with one send on the wire at a time, so everything sent while a statement
 * holds the wire waits for it and then goes as one shared send.
 */
import { randomUUID } from "node:crypto"
import { SqlError } from "@effect/sql/SqlError"
import { describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import pg from "pg"
import { inject } from "vitest"
import * as PgDriver from "../../src/layers/internal/PgDriver.js"
import { assert } from "../support/Assert.js"

const withDriver = <A, E>(use: (run: Run, table: string, pool: pg.Pool) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(async () => {
      const pool = new pg.Pool({ connectionString: inject("pgUrl"), max: 4 })
      const table = `shared_${randomUUID().replaceAll("-", "")}`
      await pool.query(`CREATE TABLE ${table} (v TEXT PRIMARY KEY, b BYTEA, n BIGINT)`)
      return { pool, table }
    }),
    ({ pool, table }) => use(PgDriver.make(pool, { inFlight: 1, members: 64 }).run, table, pool),
    ({ pool, table }) =>
      Effect.promise(async () => {
        await pool.query(`DROP TABLE ${table}`)
        await pool.end()
      }),
  )

type Run = ReturnType<typeof PgDriver.make>["run"]

/** A statement that holds the one place on the wire for `ms`, so what is sent meanwhile waits and goes shared. */
const hold = (run: Run, ms: number) => Effect.fork(run(`SELECT pg_sleep(${ms / 1000})`, [], false))

/** Forks each statement in order, then waits for each exit. */
const allAt = (statements: ReadonlyArray<Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError>>) =>
  Effect.gen(function* () {
    const fibers = []
    for (const s of statements) fibers.push(yield* Effect.fork(s))
    // Every member is queued before the holder comes back.
    yield* Effect.yieldNow()
    return yield* Effect.forEach(fibers, (f) => Fiber.await(f))
  })

const insert = (run: Run, table: string, v: string, named = false) =>
  run(`INSERT INTO ${table} (v) VALUES ($1) RETURNING v, CAST(txid_current() AS TEXT) AS tx`, [v], named)

const rowsOf = (exit: Exit.Exit<ReadonlyArray<Record<string, unknown>>, SqlError>) => {
  if (Exit.isFailure(exit)) throw new Error(`expected rows, got ${String(exit.cause)}`)
  return exit.value
}

const stored = (pool: pg.Pool, table: string) =>
  Effect.promise(async () => (await pool.query(`SELECT v FROM ${table} ORDER BY v`)).rows.map((r) => r.v as string))

describe("SharedCommit (PostgreSQL)", () => {
  it.live(
    "a lone statement chosen as a deadlock's victim is sent again and commits once the other transaction has",
    () =>
      withDriver((run, table, pool) =>
        Effect.gen(function* () {
          yield* Effect.promise(() => pool.query(`INSERT INTO ${table} (v, n) VALUES ('x', 0), ('y', 0)`))
          const other = yield* Effect.promise(() => pool.connect())
          // The other transaction holds x, and waits long before it looks for a deadlock, so the
          // lone statement (which holds y and waits for x) is the one the server rolls back.
          yield* Effect.promise(async () => {
            await other.query("BEGIN")
            await other.query("SET LOCAL deadlock_timeout = '30s'")
            await other.query(`UPDATE ${table} SET n = n + 1 WHERE v = 'x'`)
          })
          const lone = yield* Effect.fork(
            run(
              `DO $$ BEGIN UPDATE ${table} SET n = n + 10 WHERE v = 'y'; UPDATE ${table} SET n = n + 10 WHERE v = 'x'; END $$`,
              [],
              false,
            ),
          )
          yield* Effect.sleep("300 millis")
          // The cycle: the other transaction now wants y, which the lone statement holds.
          yield* Effect.promise(async () => {
            await other.query(`UPDATE ${table} SET n = n + 1 WHERE v = 'y'`)
            await other.query("COMMIT")
            other.release()
          })
          const exit = yield* Fiber.await(lone)
          assert.isTrue(Exit.isSuccess(exit), String(exit))
          const rows = yield* Effect.promise(
            async () => (await pool.query(`SELECT v, n FROM ${table} ORDER BY v`)).rows,
          )
          // Both committed, each once: the rolled-back first try left nothing behind.
          assert.deepStrictEqual(
            rows.map((r) => [r.v, Number(r.n)]),
            [
              ["x", 11],
              ["y", 11],
            ],
          )
        }),
      ),
  )

  it.live("statements that waited together commit in one transaction, each answered with its own rows", () =>
    withDriver((run, table, pool) =>
      Effect.gen(function* () {
        const holder = yield* hold(run, 150)
        const names = Array.from({ length: 12 }, (_, i) => `m${String(i).padStart(2, "0")}`)
        const exits = yield* allAt(names.map((v) => insert(run, table, v)))
        yield* Fiber.join(holder)
        const rows = exits.map((e) => rowsOf(e)[0] as { v: string; tx: string })
        assert.deepStrictEqual(
          rows.map((r) => r.v),
          names,
        )
        // One transaction for all twelve: they shared one commit.
        assert.strictEqual(new Set(rows.map((r) => r.tx)).size, 1)
        assert.deepStrictEqual(yield* stored(pool, table), names)
      }),
    ),
  )

  it.live("a member the server refuses fails alone: the others are sent again and commit, each on its own", () =>
    withDriver((run, table, pool) =>
      Effect.gen(function* () {
        yield* insert(run, table, "taken")
        const holder = yield* hold(run, 150)
        const exits = yield* allAt([insert(run, table, "a"), insert(run, table, "taken"), insert(run, table, "b")])
        yield* Fiber.join(holder)
        const [a, dup, b] = exits
        assert.isTrue(dup !== undefined && Exit.isFailure(dup))
        if (dup !== undefined && Exit.isFailure(dup)) {
          const error = dup.cause._tag === "Fail" ? dup.cause.error : undefined
          assert.isTrue(error instanceof SqlError)
          assert.strictEqual((error?.cause as { code?: string } | undefined)?.code, "23505")
        }
        const txA = (rowsOf(a as never)[0] as { tx: string }).tx
        const txB = (rowsOf(b as never)[0] as { tx: string }).tx
        // Sent again alone: two transactions, not the aborted shared one.
        assert.notStrictEqual(txA, txB)
        assert.deepStrictEqual(yield* stored(pool, table), ["a", "b", "taken"])
      }),
    ),
  )

  it.live(
    "a parameter pg cannot send refuses the shared send before anything is written: its member fails alone, the others commit",
    () =>
      withDriver((run, table, pool) =>
        Effect.gen(function* () {
          const circular: Record<string, unknown> = {}
          circular.self = circular
          const holder = yield* hold(run, 150)
          const exits = yield* allAt([
            insert(run, table, "first"),
            run(`INSERT INTO ${table} (v) VALUES ($1) RETURNING v`, [circular], false),
            insert(run, table, "last"),
          ])
          yield* Fiber.join(holder)
          const [first, bad, last] = exits
          assert.isTrue(bad !== undefined && Exit.isFailure(bad))
          assert.deepStrictEqual(
            [first, last].map((e) => rowsOf(e as never).map((r) => r.v)),
            [["first"], ["last"]],
          )
          assert.deepStrictEqual(yield* stored(pool, table), ["first", "last"])
        }),
      ),
  )

  it.live("a session lost inside a shared send answers every member with its failure and commits none of them", () =>
    withDriver((run, table, pool) =>
      Effect.gen(function* () {
        const holder = yield* hold(run, 150)
        const exits = yield* allAt([
          insert(run, table, "before"),
          run("SELECT pg_terminate_backend(pg_backend_pid())", [], false),
          insert(run, table, "after"),
        ])
        yield* Fiber.join(holder)
        // The outcome of a lost session is unknown to the caller, so nothing is sent again.
        for (const exit of exits) assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(yield* stored(pool, table), [])
        // The pool drops the dead connection: the next statement works.
        assert.deepStrictEqual(
          rowsOf(yield* Effect.exit(insert(run, table, "later"))).map((r) => r.v),
          ["later"],
        )
      }),
    ),
  )

  it.live("a member interrupted while it waits is never sent", () =>
    withDriver((run, table, pool) =>
      Effect.gen(function* () {
        const holder = yield* hold(run, 150)
        const left = yield* Effect.fork(insert(run, table, "left"))
        const stays = yield* Effect.fork(insert(run, table, "stays"))
        yield* Effect.yieldNow()
        yield* Fiber.interrupt(left)
        yield* Fiber.join(holder)
        assert.deepStrictEqual(
          (yield* Fiber.join(stays)).map((r) => r.v),
          ["stays"],
        )
        assert.deepStrictEqual(yield* stored(pool, table), ["stays"])
      }),
    ),
  )

  it.live(
    "named statements: bound by name where parsed, parsed unnamed where not, and the lone path still works after",
    () =>
      withDriver((run, table, pool) =>
        Effect.gen(function* () {
          const select = `SELECT v, b, n FROM ${table} WHERE v = $1`
          const put = `INSERT INTO ${table} (v, b, n) VALUES ($1, $2, $3) RETURNING v, b, n, CAST(txid_current() AS TEXT) AS tx`
          // Parsed by name on whichever connection a lone send took.
          yield* run(put, ["lone", Buffer.from([1, 2]), "9007199254740993"], true)
          const holder = yield* hold(run, 150)
          const exits = yield* allAt([
            run(put, ["s1", Buffer.from([0, 255]), null], true),
            run(select, ["lone"], true),
            run(put, ["s2", new Uint8Array([7]), "-5"], true),
          ])
          yield* Fiber.join(holder)
          const [s1, lone, s2] = exits.map(
            (e) => rowsOf(e)[0] as { v: string; b: Buffer | null; n: string | null; tx?: string },
          )
          // Shared, not sent again alone after a refusal: one transaction.
          assert.strictEqual(s1?.tx, s2?.tx)
          assert.deepStrictEqual([s1?.v, [...(s1?.b ?? [])], s1?.n], ["s1", [0, 255], null])
          assert.deepStrictEqual([lone?.v, [...(lone?.b ?? [])], lone?.n], ["lone", [1, 2], "9007199254740993"])
          assert.deepStrictEqual([s2?.v, [...(s2?.b ?? [])], s2?.n], ["s2", [7], "-5"])
          // Every connection of the pool still runs both named statements alone.
          for (let i = 0; i < 6; i++) {
            const [row] = yield* run(select, ["s2"], true)
            assert.strictEqual(row?.v, "s2")
            yield* run(put, [`after${i}`, null, null], true)
          }
          assert.strictEqual((yield* stored(pool, table)).length, 9)
        }),
      ),
  )
})
