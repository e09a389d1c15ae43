/**
 * The few primitives on which PostgreSQL and SQLite differ, each with the reason it differs.
 * Everything else in the SQL layers is one statement text for both dialects.
 */
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, Scope } from "effect"
import { Backend } from "../../errors/StoreError.js"

export interface Dialect {
  readonly name: "pg" | "sqlite"
  /**
   * A read-then-write transaction. pg: a plain transaction on one reserved connection, since the
   * statements themselves take the row locks they need. sqlite: `BEGIN IMMEDIATE`, so a second
   * process on the file waits at the start instead of failing to upgrade its lock mid-verb.
   *
   * Inside a caller's own transaction this becomes a savepoint, and the caller's COMMIT is
   * @effect/sql's: a commit lost there is still a defect, not `Backend`. A failed ROLLBACK
   * surfaces as `Backend` in place of the verb's own error, since the outcome is then unknown.
   */
  readonly write: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /**
   * A consistent multi-statement read on one connection. pg: repeatable read, so a case is not
   * assembled from two moments; sqlite: a deferred transaction already reads one snapshot.
   */
  readonly read: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** Row-lock suffix for a read inside `write`. pg: `FOR UPDATE`; sqlite: empty, the write lock is already held. */
  readonly forUpdate: string
}

export const make: Effect.Effect<Dialect, never, SqlClient.SqlClient> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const plain = transaction(sql, "BEGIN")
  return sql.onDialectOrElse({
    pg: (): Dialect => ({
      name: "pg",
      write: (effect) => commitLossFails(plain(effect)),
      // Inside a caller's transaction the read joins it: the isolation level can only be set first.
      read: (effect) =>
        Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
          Option.isSome(outer)
            ? effect
            : commitLossFails(
                plain(Effect.zipRight(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`, effect)),
              ),
        ),
      forUpdate: "FOR UPDATE",
    }),
    sqlite: (): Dialect => {
      const immediate = transaction(sql, "BEGIN IMMEDIATE")
      return {
        name: "sqlite",
        write: (effect) => commitLossFails(immediate(effect)),
        read: (effect) => commitLossFails(plain(effect)),
        forUpdate: "",
      }
    },
    orElse: () => {
      throw new Error("agentplane runs on PostgreSQL or SQLite only")
    },
  })
})

/**
 * better-sqlite3 throws synchronously from a closed database, before the transaction's cleanup
 * is in place: caught here, it is an `SqlError` (so `Backend`) and the reserved connection goes back.
 */
const unprepared = (conn: Connection, statement: string) =>
  Effect.try({
    try: () => conn.executeUnprepared(statement, [], undefined),
    catch: (cause) => new SqlError({ cause, message: `${statement} failed` }),
  }).pipe(Effect.flatten, Effect.asVoid)

/**
 * The client's own transaction, except after a failed COMMIT: the connection then runs ROLLBACK
 * before it goes back to the pool. pg: a backend killed inside COMMIT answers with its FATAL error
 * before its socket closes, so the client went back to the pool looking healthy and the next verb
 * to draw it failed; the ROLLBACK fails on the dead socket, which tells the pool to drop it.
 * sqlite: a COMMIT refused as busy leaves the transaction open on the one shared connection.
 */
const transaction = (sql: SqlClient.SqlClient, begin: string) => {
  // Connections whose BEGIN succeeded. @effect/sql rolls back after any failure, a failed BEGIN
  // included, and a ROLLBACK with no transaction fails ("cannot rollback - no transaction is
  // active") in place of the real cause: SQLite's SQLITE_BUSY, when another process held the
  // write lock past the busy timeout, or pg's error on a dead connection.
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

// @effect/sql turns a failed COMMIT into a defect. A commit whose outcome is unknown (the
// connection dropped) is a backend failure the caller must hear about and may retry, not a crash.
const commitLossFails = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchSomeDefect(effect, (defect) =>
    defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none(),
  )

export const isSqlError = (u: unknown): u is SqlError => u instanceof SqlError

/** The driver's code for a failed statement: pg's SQLSTATE or better-sqlite3's `SQLITE_…` code. */
const codeOf = (error: SqlError): string | undefined => {
  // pg-pool and @effect/sql-pg may wrap the driver's error once more (`cause.cause`).
  for (let cause: unknown = error.cause, depth = 0; depth < 3; depth++) {
    if (typeof cause !== "object" || cause === null) return undefined
    if ("code" in cause && typeof cause.code === "string") return cause.code
    cause = "cause" in cause ? cause.cause : undefined
  }
  return undefined
}

/** A unique or primary-key constraint refused the write. */
export const isUniqueViolation = (error: SqlError): boolean => {
  const code = codeOf(error)
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY"
}

/** A foreign key refused the write: the parent row is missing. */
export const isForeignKeyViolation = (error: SqlError): boolean => {
  const code = codeOf(error)
  return code === "23503" || code === "SQLITE_CONSTRAINT_FOREIGNKEY"
}

/**
 * Why a backend failed, as far as a caller can act on it. `Backend.detail` begins with one of
 * these and ": " (the HTTP layer answers with the reason and keeps the rest for the log), since
 * `Backend` itself carries only its detail.
 */
export type Reason = "lock_timeout" | "statement_timeout" | "pool_exhausted" | "connect_failed" | "busy" | "backend"

/** The reason of a driver error: by pg's SQLSTATE, SQLite's code or Node's errno; by pg-pool's wording where it has no code. */
export const reasonOf = (error: SqlError): Reason => {
  const code = codeOf(error) ?? ""
  const text = `${error.message} ${error.cause instanceof Error ? error.cause.message : ""}`
  if (code === "55P03") return "lock_timeout"
  // 57014 is any cancellation; the server names the statement timeout in its message.
  if (code === "57014" && /statement timeout/i.test(text)) return "statement_timeout"
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "busy"
  // pg-pool's own error for a wait on a full pool that outlasted the acquire timeout.
  if (/timeout exceeded when trying to connect/i.test(text)) return "pool_exhausted"
  if (
    code.startsWith("08") ||
    code.startsWith("57P") ||
    CONNECTION_ERRNOS.has(code) ||
    /connection terminated|connection timeout|cannot connect to PostgreSQL/i.test(text)
  ) {
    return "connect_failed"
  }
  return "backend"
}

const CONNECTION_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT"])

/** Wraps the driver's error so that `SqlError` never leaves `src/layers`; the detail leads with its `Reason`. */
export const backend = (error: SqlError): Backend => {
  const cause =
    error.cause instanceof Error && !error.message.includes(error.cause.message) ? `: ${error.cause.message}` : ""
  return new Backend({ detail: `${reasonOf(error)}: ${error.message}${cause}` })
}

/** Turns every remaining `SqlError` of a verb into `Backend`. */
export const orBackend = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, Exclude<E, SqlError> | Backend, R> =>
  Effect.catchIf(
    effect,
    (e): e is E & SqlError => isSqlError(e),
    (e) => Effect.fail(backend(e)),
  ) as Effect.Effect<A, Exclude<E, SqlError> | Backend, R>

/** Recovers from the driver errors `test` recognises (a constraint that settled a race, say). */
export const catchSql =
  <A2, E2>(test: (error: SqlError) => boolean, recover: (error: SqlError) => Effect.Effect<A2, E2>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A | A2, E | E2, R> =>
    Effect.catchIf(
      effect,
      (e): e is E & SqlError => isSqlError(e) && test(e),
      (e: E & SqlError) => recover(e),
    )

/** A caller's limit as SQL sees it: whole and non-negative (a limit of 0 returns nothing). */
export const clampLimit = (limit: number): number => (Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : 0)
