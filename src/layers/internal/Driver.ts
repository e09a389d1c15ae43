/**
 * The stores' way to the database beneath `@effect/sql`: one statement outside any transaction,
 * and a transaction of the stores' own. The backend layers provide one over the driver they
 * built (`PgPool`'s `pg.Pool`, `SqliteDriver`'s better-sqlite3 handle), so a store statement costs
 * about what the driver call costs; any other `SqlClient` gets `fromClient`, the same contract
 * through `@effect/sql`'s own path.
 *
 * Either way a transaction puts its connection in `SqlClient.TransactionConnection`, so the
 * client's own statements inside it (an application's, a test's) run on it, and a store verb
 * called inside an application's `withTransaction` joins that one instead of opening its own.
 */
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, type Exit, FiberRef, Option, Scope } from "effect"

export type Row = Record<string, unknown>

/** How a transaction begins. `write`: it will write (sqlite takes the write lock at once). `read`: one consistent snapshot, read only. */
export type Mode = "write" | "read"

export class Driver extends Context.Tag("agentplane/Driver")<
  Driver,
  {
    readonly dialect: "pg" | "sqlite"
    /** Runs one statement on a connection of its own, autocommitted; rows as the driver returns them. */
    readonly run: (
      text: string,
      params: ReadonlyArray<unknown>,
      named: boolean,
    ) => Effect.Effect<ReadonlyArray<Row>, SqlError>
    /**
     * Runs `effect` in a new transaction on one connection, committed when it succeeds and rolled
     * back otherwise. A failed COMMIT is an `SqlError` (the outcome is unknown), never a defect,
     * and leaves no transaction open; a connection that failed to commit or roll back is dropped.
     */
    readonly transaction: (mode: Mode) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
    /**
     * sqlite: runs the statement now, on the calling fiber, when nothing needs waiting for: on
     * `conn` (the transaction this fiber holds the lock in) or, with no `conn`, while no
     * transaction holds the lock; `undefined` otherwise, and the caller takes `run`'s path. A
     * synchronous driver's statement is then one step of the fiber instead of three. pg: absent.
     */
    readonly immediate?: (
      text: string,
      params: ReadonlyArray<unknown>,
      conn: Connection | undefined,
    ) => Exit.Exit<ReadonlyArray<Row>, SqlError> | undefined
  }
>() {}

/** The transaction connection a statement of the current fiber must run on, if any. */
export const currentConnection = (context: Context.Context<never>): Connection | undefined => {
  const held = Context.getOption(context, SqlClient.TransactionConnection)
  return held._tag === "Some" ? held.value[0] : undefined
}

/**
 * The driver over any `SqlClient`: statements through the client (without its name transforms),
 * transactions through `SqlClient.makeWithTransaction` with the guarantees above added.
 */
export const fromClient = (client: SqlClient.SqlClient, dialect: "pg" | "sqlite"): Driver["Type"] => {
  const sql = client.withoutTransforms()
  const plain = managed(sql, "BEGIN")
  const begin = {
    write: dialect === "sqlite" ? managed(sql, "BEGIN IMMEDIATE") : plain,
    // pg: the isolation level can only be set as the transaction's first statement.
    read:
      dialect === "pg"
        ? <A, E, R>(effect: Effect.Effect<A, E, R>) =>
            plain(Effect.zipRight(sql.unsafe("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"), effect))
        : plain,
  }
  return {
    dialect,
    run: (text, params) => sql.unsafe<Row>(text, params).withoutTransform,
    transaction: (mode) => (effect) => commitLossFails(begin[mode](effect)),
  }
}

/**
 * `effect`'s exit, run with `conn` as the fiber's transaction connection; the context is set back
 * after it whatever the exit. For a driver's own transaction, inside `uninterruptibleMask` with
 * its `restore`: one FiberRef write each way, where `provideService` (a scoped `locally`, built
 * on `acquireUseRelease`) cost about 8 µs a transaction.
 */
export const withConnection = <A, E, R>(
  conn: Connection,
  restore: <A1, E1, R1>(effect: Effect.Effect<A1, E1, R1>) => Effect.Effect<A1, E1, R1>,
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<Exit.Exit<A, E>, never, R> =>
  Effect.withFiberRuntime((fiber) => {
    const outer = fiber.currentContext
    return Effect.zipRight(
      FiberRef.set(FiberRef.currentContext, Context.add(outer, SqlClient.TransactionConnection, [conn, 0])),
      Effect.flatMap(Effect.exit(restore(effect)), (exit) =>
        Effect.as(FiberRef.set(FiberRef.currentContext, outer), exit),
      ),
    )
  })

/** Runs `statement` unprepared on `conn`, turning a synchronous throw (a closed SQLite file) into `SqlError`. */
export const unprepared = (conn: Connection, statement: string) =>
  Effect.try({
    try: () => conn.executeUnprepared(statement, [], undefined),
    catch: (cause) => new SqlError({ cause, message: `${statement} failed` }),
  }).pipe(Effect.flatten, Effect.asVoid)

// internal

/**
 * The client's own transaction, except after a failed COMMIT: the connection then runs ROLLBACK
 * before it goes back to the pool. pg: a backend killed inside COMMIT answers with its FATAL error
 * before its socket closes; the ROLLBACK fails on the dead socket, which tells the pool to drop it.
 * sqlite: a COMMIT refused as busy leaves the transaction open on the one shared connection.
 */
const managed = (sql: SqlClient.SqlClient, begin: string) => {
  // Connections whose BEGIN succeeded: @effect/sql rolls back after any failure, a failed BEGIN
  // included, and a ROLLBACK with no transaction would fail in place of the real cause.
  const begun = new WeakSet<Connection>()
  return SqlClient.makeWithTransaction({
    transactionTag: SqlClient.TransactionConnection,
    spanAttributes: [],
    acquireConnection: Effect.flatMap(Scope.make(), (scope) =>
      Effect.map(Scope.extend(sql.reserve, scope), (conn) => [scope, conn] as const),
    ),
    begin: (conn) => Effect.tap(unprepared(conn, begin), () => Effect.sync(() => begun.add(conn))),
    savepoint: (conn, id) => unprepared(conn, `SAVEPOINT effect_sql_${id}`),
    commit: (conn) =>
      unprepared(conn, "COMMIT").pipe(
        Effect.tapError(() => Effect.ignore(unprepared(conn, "ROLLBACK"))),
        Effect.ensuring(Effect.sync(() => begun.delete(conn))),
      ),
    rollback: (conn) =>
      begun.has(conn)
        ? Effect.ensuring(
            unprepared(conn, "ROLLBACK"),
            Effect.sync(() => begun.delete(conn)),
          )
        : Effect.void,
    rollbackSavepoint: (conn, id) => unprepared(conn, `ROLLBACK TO SAVEPOINT effect_sql_${id}`),
  })
}

/** @effect/sql turns a failed COMMIT into a defect; an unknown outcome is a failure the caller may retry. */
const commitLossFails = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchSomeDefect(effect, (defect) =>
    defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none(),
  )

/**
 * The driver's error for a statement that failed, naming the statement by its opening (its text
 * has placeholders, never values), so a caller whose statement shared a transaction or a round
 * trip with others learns which one failed, and why (`cause`).
 */
export const statementFailed = (cause: unknown, text: string): SqlError =>
  new SqlError({ cause, message: `Failed to execute statement ${opening(text)}` })

const opening = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= 80 ? flat : `${flat.slice(0, 80)}…`
}
