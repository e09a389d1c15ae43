/**
 * Every place PostgreSQL and SQLite differ, each a named fragment or statement with the reason it
 * differs, spelled `pg:` / `sqlite:` so one search lists them all; and the way the stores send
 * statements: each text compiled once per dialect when the store is built, sent through the
 * `Driver` on the caller's transaction connection when there is one, its rows decoded by a
 * decoder built once.
 */
import { SqlClient, Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Exit, type Fiber, Option, Schema } from "effect"
import { Corrupt } from "../../errors/StoreError.js"
import * as Driver from "./Driver.js"
import * as PgDriver from "./PgDriver.js"

/** A hole in a statement: a number is the index of its parameter, a string is text of this dialect. */
export type Hole = number | string

/** A compiled statement: its parameters in order, its decoded rows. */
export type Query<A> = (...params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, SqlError | Corrupt>

/** A compiled statement whose rows are not read, only counted (every mutating statement says RETURNING). */
export type Command = (...params: ReadonlyArray<unknown>) => Effect.Effect<number, SqlError>

export interface Options {
  /**
   * pg: send as a named statement, parsed and planned once per connection. Only for statements
   * whose best plan does not depend on the values: after five executions PostgreSQL may switch a
   * named statement to one generic plan, which is wrong for the skewed queue reads (a tenant with
   * a million due timers and one with none), so those stay unnamed and are planned every time.
   * sqlite: every statement is prepared once anyway.
   */
  readonly named?: boolean
}

export interface Dialect {
  readonly name: "pg" | "sqlite"
  /**
   * A read-then-write transaction. pg: a plain transaction, since the statements take the row
   * locks they need; sqlite: `BEGIN IMMEDIATE`, so a second process on the file waits at the
   * start instead of failing to upgrade its lock mid-verb. Inside a caller's transaction this is
   * a savepoint of it, and the caller's COMMIT is @effect/sql's (a commit lost there is a defect).
   */
  readonly write: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /**
   * A consistent multi-statement read on one connection. pg: repeatable read, so a case is not
   * assembled from two moments; sqlite: a deferred transaction already reads one snapshot.
   * Inside a caller's transaction it joins it: the isolation level can only be set first.
   */
  readonly read: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** A statement whose rows decode through `schema`; `what` names the table in a `Corrupt`. */
  readonly query: <A, I>(
    schema: Schema.Schema<A, I>,
    what: string,
    options?: Options,
  ) => (strings: ReadonlyArray<string>, ...holes: ReadonlyArray<Hole>) => Query<A>
  /** A statement whose rows are only counted. */
  readonly command: (options?: Options) => (strings: ReadonlyArray<string>, ...holes: ReadonlyArray<Hole>) => Command
  /**
   * pg: a statement may write inside WITH, so a read, its guarded insert and the insert's
   * children go in one round trip; sqlite: WITH holds SELECTs only, so they go in a transaction.
   */
  readonly writableCte: boolean
  /**
   * The database this dialect's statements reach (the backend's driver, else the client): two
   * stores with the same one may fold each other's writes into one statement (`Folds`).
   */
  readonly database: object
  /** pg: `FOR UPDATE` on a read inside `write`; sqlite: empty, the write lock is already held. */
  readonly forUpdate: string
  /**
   * The backend's time in whole seconds. pg: `now()`, shared by every instance (FLOOR, because a
   * cast to BIGINT rounds); sqlite: the process clock, the only one there is.
   */
  readonly now: string
  /** The smaller of two values. pg: `LEAST`; sqlite: the two-argument scalar `MIN`. */
  readonly least: string
  /** The next conclusion ordinal. pg: a sequence; sqlite has none and takes MAX + 1, safe under its write lock. */
  readonly nextOrdinal: string
  /**
   * The next conclusion ordinal of one (tenant, outcome), as `parts` pieces over the two
   * parameter holes. pg: the sequence. sqlite: `nextOrdinal`'s `MAX + 1` over the whole table has
   * no index leading with `ordinal`, so every seal scanned every run ever concluded and the
   * wake-up bench fell from 215/s at 1,000 due to under 40/s at 10,000. The ordinal only orders
   * `runsByOutcome`, which lists one (tenant, outcome), so it is that pair's `MAX + 1` through
   * `run_outcome_recent`, still under the write lock that makes `MAX + 1` safe: still the most
   * recent conclusion first, and a run concluded again moves to the head of its new outcome.
   */
  readonly outcomeOrdinal: (tenant: number, outcome: number) => ReadonlyArray<string | number>
  /**
   * Serialises the transactions that lock one of `names` until they end. pg: one transaction-scoped
   * advisory lock per name, in the order given (every caller sorts, so two lockers never wait on
   * each other); sqlite: nothing, since `BEGIN IMMEDIATE` already holds the file's one write lock.
   */
  readonly lockNames: (names: ReadonlyArray<string>) => Effect.Effect<void, SqlError>
  /**
   * Serialises admissions of one tenant. pg: a per-tenant advisory lock (the length prefix keeps
   * `a:b` and `a` + `:b` apart); sqlite: the write lock `write` holds already.
   */
  readonly admissionLock: (tenant: string) => Effect.Effect<void, SqlError>
  /**
   * A column's sum, saturating at MAX_SAFE_INTEGER. pg: SUM(bigint) is numeric and cannot
   * overflow; sqlite: integer SUM raises an error past 2^63 before any cap applies, so TOTAL (a
   * double) is capped instead; below the cap every partial sum is an exact integer.
   */
  readonly cappedSum: (column: "tokens" | "minor") => string
}

/**
 * A statement built piece by piece (an IN list of some length): strings are text, numbers are
 * parameter holes, as arguments for `query(…)` or `command(…)`.
 */
export const parts = (pieces: ReadonlyArray<string | number>): [ReadonlyArray<string>, ...Array<Hole>] => {
  const strings: Array<string> = [""]
  const holes: Array<Hole> = []
  for (const piece of pieces) {
    if (typeof piece === "string") strings[strings.length - 1] += piece
    else {
      holes.push(piece)
      strings.push("")
    }
  }
  return [strings, ...holes]
}

/** `f` built once per count: the statements whose text depends on how many keys a call carries. */
export const perCount = <A>(f: (n: number) => A) => {
  const built = new Map<number, A>()
  return (n: number): A => {
    let a = built.get(n)
    if (a === undefined) {
      a = f(n)
      built.set(n, a)
    }
    return a
  }
}

/** `(…), (…)` for `n` rows of a VALUES list, as `parts` pieces: row `i`'s parameter holes are `holes(i)`. */
export const tuples = (n: number, holes: (i: number) => ReadonlyArray<number>): Array<string | number> =>
  Array.from({ length: n }, (_, i) => [
    i === 0 ? "(" : ", (",
    ...holes(i).flatMap((hole, j) => (j === 0 ? [hole] : [", ", hole])),
    ")",
  ]).flat()

const count = (rows: ReadonlyArray<unknown>) => Exit.succeed(rows.length)

/** Written as a literal: better-sqlite3 may bind a large number as a REAL. */
export const MAX_SAFE = String(Number.MAX_SAFE_INTEGER)

/** The dialect of the provided `SqlClient`, with its `Driver` (the backend's, else one through the client). */
export const make: Effect.Effect<Dialect, never, SqlClient.SqlClient> = Effect.gen(function* () {
  const client = yield* SqlClient.SqlClient
  const sql = client.withoutTransforms()
  const name = sql.onDialectOrElse({
    pg: () => "pg" as const,
    sqlite: () => "sqlite" as const,
    orElse: () => {
      throw new Error("agentplane runs on PostgreSQL or SQLite only")
    },
  })
  const nested = Driver.fromClient(sql, name)
  const provided = yield* Effect.serviceOption(Driver.Driver)
  const driver = Option.getOrElse(provided, () => nested)
  const lean = {
    write: driver.transaction("write"),
    read: driver.transaction("read"),
    savepoint: nested.transaction("write"),
  }

  /**
   * One statement on the connection it belongs to. With a statement transformer installed (the
   * bench's capture, an application's own), it goes through the client so the transformer sees
   * it; otherwise the caller's transaction connection, else a connection of its own.
   */
  const immediate = driver.immediate
  const start = (
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    text: string,
    params: ReadonlyArray<unknown>,
    named: boolean,
  ): Effect.Effect<ReadonlyArray<Driver.Row>, SqlError> => {
    if (Option.isSome(fiber.getFiberRef(Statement.currentTransformer))) {
      return sql.unsafe<Driver.Row>(text, params).withoutTransform
    }
    const conn = Driver.currentConnection(fiber.currentContext)
    const now = immediate?.(text, params, conn)
    if (now !== undefined) return now
    if (conn === undefined) return driver.run(text, params, named)
    return PgDriver.isLean(conn) ? conn.lean(text, params, named) : conn.execute(text, params, undefined)
  }

  /**
   * One statement, then `after` on its rows, as one step of the fiber when the driver ran it at
   * once (sqlite): the rows are read, decoded and answered without a further effect in between.
   */
  const run = <A, E>(
    text: string,
    params: ReadonlyArray<unknown>,
    named: boolean,
    after: (rows: ReadonlyArray<Driver.Row>) => Exit.Exit<A, E>,
  ) =>
    Effect.withFiberRuntime<A, SqlError | E>((fiber) => {
      const sent = start(fiber, text, params, named)
      if (!Exit.isExit(sent)) return Effect.flatMap(sent, after)
      const exit = sent as Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>
      return exit._tag === "Success" ? after(exit.value) : Exit.failCause(exit.cause)
    })

  const compile = <A, E>(
    strings: ReadonlyArray<string>,
    holes: ReadonlyArray<Hole>,
    named: boolean,
    after: (rows: ReadonlyArray<Driver.Row>) => Exit.Exit<A, E>,
  ) => {
    let text = strings[0] ?? ""
    const order: Array<number> = []
    holes.forEach((hole, i) => {
      if (typeof hole === "string") text += hole
      else {
        order.push(hole)
        // pg: numbered placeholders, a parameter may repeat; sqlite: `?` in order of appearance.
        text += name === "pg" ? `$${hole + 1}` : "?"
      }
      text += strings[i + 1] ?? ""
    })
    const inOrder = name === "pg" || order.every((hole, i) => hole === i)
    return (params: ReadonlyArray<unknown>) => run(text, inOrder ? params : order.map((i) => params[i]), named, after)
  }

  const write: Dialect["write"] = (effect) =>
    Effect.withFiberRuntime((fiber) =>
      Driver.currentConnection(fiber.currentContext) === undefined ? lean.write(effect) : lean.savepoint(effect),
    )
  const read: Dialect["read"] = (effect) =>
    Effect.withFiberRuntime((fiber) =>
      Driver.currentConnection(fiber.currentContext) === undefined ? lean.read(effect) : effect,
    )

  const command: Dialect["command"] =
    (options) =>
    (strings, ...holes) => {
      const send = compile(strings, holes, options?.named === true, count)
      return (...params) => send(params)
    }

  const pg = name === "pg"
  const lockName = command({ named: true })`SELECT pg_advisory_xact_lock(hashtextextended(${0}, 0))`
  const lockAdmission = command({
    named: true,
  })`SELECT pg_advisory_xact_lock(hashtextextended('quota-admission:' || octet_length(${0}::text) || ':' || ${0}::text, 0))`

  return {
    name,
    write,
    read,
    query:
      (schema, what, options) =>
      (strings, ...holes) => {
        const decode = Schema.decodeUnknownEither(Schema.Array(schema))
        const send = compile(strings, holes, options?.named === true, (rows) => {
          const decoded = decode(rows)
          return Either.isRight(decoded)
            ? Exit.succeed(decoded.right)
            : Exit.fail(new Corrupt({ detail: `${what}: ${decoded.left.message}`, seq: 0 }))
        })
        return (...params) => send(params)
      },
    command,
    writableCte: pg,
    database: Option.getOrElse(provided, () => client),
    forUpdate: pg ? "FOR UPDATE" : "",
    now: pg ? "CAST(FLOOR(EXTRACT(EPOCH FROM now())) AS BIGINT)" : "CAST(strftime('%s', 'now') AS INTEGER)",
    least: pg ? "LEAST" : "MIN",
    nextOrdinal: pg ? "nextval('run_conclusion_ordinal')" : "(SELECT COALESCE(MAX(ordinal), 0) + 1 FROM run_outcome)",
    outcomeOrdinal: (tenant, outcome) =>
      pg
        ? ["nextval('run_conclusion_ordinal')"]
        : [
            "(SELECT COALESCE(MAX(ordinal), 0) + 1 FROM run_outcome WHERE tenant = ",
            tenant,
            " AND outcome = ",
            outcome,
            ")",
          ],
    lockNames: (names) => (pg ? Effect.forEach(names, (n) => lockName(n), { discard: true }) : Effect.void),
    admissionLock: (tenant) => (pg ? Effect.asVoid(lockAdmission(tenant)) : Effect.void),
    cappedSum: (column) =>
      pg
        ? `LEAST(COALESCE(SUM("${column}"), 0), ${MAX_SAFE})`
        : `CAST(MIN(TOTAL("${column}"), ${MAX_SAFE}) AS INTEGER)`,
  }
})
