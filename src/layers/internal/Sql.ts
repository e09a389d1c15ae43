/**
 * The stores' plumbing around a statement: the verb skeleton, and the driver's errors read and
 * turned into `Backend`. Where PostgreSQL and SQLite differ is `Dialect`'s, not this module's.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { SqlError as SqlErrorClass } from "@effect/sql/SqlError"
import { Context, Effect } from "effect"
import { Tenant } from "../../domain/Tenant.js"
import { Backend, type BackendReason } from "../../errors/StoreError.js"
import * as Dialect from "./Dialect.js"

export type { Dialect } from "./Dialect.js"

/** The dialect of the provided client (see `Dialect.make`). */
export const make = Dialect.make

/**
 * A store verb: the tenant from context, then `body`, with every `SqlError` it leaves turned
 * into `Backend`. Written once here instead of by hand in every verb.
 */
export const verb =
  <Args extends ReadonlyArray<unknown>, A, E, R>(body: (tenant: string, ...args: Args) => Effect.Effect<A, E, R>) =>
  (...args: Args): Effect.Effect<A, Exclude<E, SqlError> | Backend, R | Tenant> =>
    // The tenant read from the fiber's context in the same step that starts the body: the type
    // requires `Tenant`, so it is there.
    orBackend(
      Effect.withFiberRuntime<A, E, R>((fiber) =>
        body(Context.unsafeGet(fiber.currentContext as Context.Context<Tenant>, Tenant), ...args),
      ),
    )

export const isSqlError = (u: unknown): u is SqlError => u instanceof SqlErrorClass

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

/** A text did not parse as a number (pg 22P02): how a statement undoes itself on purpose (`JournalStoreSql` `openStatement`). */
export const isBadNumber = (error: SqlError): boolean => codeOf(error) === "22P02"

/** A foreign key refused the write: the parent row is missing. */
export const isForeignKeyViolation = (error: SqlError): boolean => {
  const code = codeOf(error)
  return code === "23503" || code === "SQLITE_CONSTRAINT_FOREIGNKEY"
}

/** Why a backend failed (`Backend.reason`); `backend` also leads `Backend.detail`, for the log. */
export type Reason = BackendReason

/** The reason of a driver error: by pg's SQLSTATE, SQLite's code or Node's errno; by pg-pool's wording where it has no code. */
export const reasonOf = (error: SqlError): Reason => {
  const code = codeOf(error) ?? ""
  const text = `${error.message} ${error.cause instanceof Error ? error.cause.message : ""}`
  if (code === "55P03") return "lock_timeout"
  // 57014 is any cancellation; the server names the statement timeout in its message.
  if (code === "57014" && /statement timeout/i.test(text)) return "statement_timeout"
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "busy"
  if (code === STORE_GONE) return "store_gone"
  // pg-pool's own error for a wait on a full pool that outlasted the acquire timeout.
  if (/timeout exceeded when trying to connect/i.test(text)) return "pool_exhausted"
  // Class 08 is pg's connection exceptions, except 08P01: a protocol violation is a statement
  // the client encoded wrongly (a bind of over 65,535 parameters, say), which no reconnect fixes.
  if (
    (code.startsWith("08") && code !== "08P01") ||
    code.startsWith("57P") ||
    CONNECTION_ERRNOS.has(code) ||
    /connection terminated|connection timeout|cannot connect to PostgreSQL/i.test(text)
  ) {
    return "connect_failed"
  }
  return "backend"
}

/** The code of the driver's error for a SQLite file deleted or replaced under the open connection (`SqliteDriver`). */
export const STORE_GONE = "AGENTPLANE_STORE_GONE"

const CONNECTION_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT"])

/** Wraps the driver's error so that `SqlError` never leaves `src/layers`; its `reason` set from the driver error, and leading its detail for the log. */
export const backend = (error: SqlError): Backend => {
  const cause =
    error.cause instanceof Error && !error.message.includes(error.cause.message) ? `: ${error.cause.message}` : ""
  const reason = reasonOf(error)
  return new Backend({ reason, detail: `${reason}: ${error.message}${cause}` })
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
