/**
 * The SQLite file as an `@effect/sql` client and as the stores' `Driver`, over one better-sqlite3
 * connection. `@effect/sql-sqlite-node` keeps its handle and its lock to itself, so a statement
 * through it costs a cache lookup, a span and a scope around a call of a few microseconds; here
 * the stores call the prepared statement directly, under the same one lock the client uses.
 *
 * One connection, one lock: a transaction holds the lock from its BEGIN to its COMMIT or ROLLBACK,
 * so no other fiber's statement can land inside it. A single statement needs the lock only while
 * a transaction holds it: the call is synchronous, so nothing else runs while it does. Store
 * write transactions ready at the same time share one COMMIT (`GroupCommit`).
 *
 * SQLite's own busy handler is off (`busy_timeout = 0`): better-sqlite3 runs it on the event loop,
 * so one request waiting for another process's write lock froze the whole server, `/healthz`
 * included. A statement or a BEGIN IMMEDIATE that SQLite answers busy is tried again after an
 * asynchronous sleep (`Busy.retry`), with the process lock given back in between, until
 * `busyTimeoutMs` has passed; then the busy error stands (a 503 `busy`).
 */

import { statSync } from "node:fs"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import Database from "better-sqlite3"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Busy from "./Busy.js"
import * as Driver from "./Driver.js"
import * as GroupCommit from "./GroupCommit.js"
import * as Lock from "./Lock.js"
import * as Sql from "./Sql.js"

export interface Options {
  readonly filename: string
  /** How long a write waits for another process's write lock, milliseconds. */
  readonly busyTimeoutMs: number
}

/** The client and the stores' driver over the file `options.filename`; a file that cannot serve fails as `SqlError`. */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient | Driver.Driver, SqlError> =>
  Layer.scopedContext(make(options)).pipe(Layer.provide(Reactivity.layer))

export const make = (options: Options) =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const db = new Database(options.filename)
          try {
            // The first statement reads the file: one that is not a database fails here. WAL lets
            // readers of other processes (a CLI beside the server) read while we write.
            db.pragma("journal_mode = WAL")
            // Off by default in SQLite; `NotFound` for a missing parent comes from the foreign keys.
            db.pragma("foreign_keys = ON")
            // Waits happen in `Busy.retry`, off the event loop; see the module comment.
            db.pragma("busy_timeout = 0")
          } catch (cause) {
            db.close()
            throw cause
          }
          return db
        },
        catch: (cause) => new SqlError({ cause, message: `cannot open ${options.filename}` }),
      }),
      (db) => Effect.sync(() => db.close()),
    )
    const lock = Lock.make()
    // The file as opened: a write is acknowledged only while the path still names this file.
    const opened = identity(options.filename)
    const intact = (): Exit.Exit<void, SqlError> => {
      const now = identity(options.filename)
      if (opened !== undefined && now === opened) return Exit.void
      const cause = Object.assign(new Error(`the SQLite file ${options.filename} was deleted or replaced`), {
        code: Sql.STORE_GONE,
      })
      return Exit.fail(new SqlError({ cause, message: `store gone: ${options.filename}` }))
    }
    const patience = Math.max(0, Math.round(options.busyTimeoutMs))
    const statements = new Map<string, Database.Statement>()

    /** The statement for `text`, prepared once; the cache is bounded, since IN lists vary in length. */
    const prepared = (text: string): Database.Statement => {
      let statement = statements.get(text)
      if (statement === undefined) {
        if (statements.size >= CACHE) statements.clear()
        statement = db.prepare(text)
        statements.set(text, statement)
      }
      return statement
    }

    /** The statement run now; an Exit is an Effect too, so callers return it as one. */
    const all = (text: string, params: ReadonlyArray<unknown>): Exit.Exit<ReadonlyArray<Driver.Row>, SqlError> => {
      try {
        const statement = prepared(text)
        let rows = NO_ROWS
        if (statement.reader) rows = statement.all(...params) as ReadonlyArray<Driver.Row>
        else statement.run(...params)
        // A write outside a transaction (RETURNING ones included) committed by itself: it is not
        // acknowledged on a file that is gone.
        return statement.readonly || db.inTransaction ? Exit.succeed(rows) : Exit.as(intact(), rows)
      } catch (cause) {
        return Exit.fail(Driver.statementFailed(cause, text))
      }
    }

    const exec = (text: string): Exit.Exit<void, SqlError> => {
      try {
        db.exec(text)
        return Exit.void
      } catch (cause) {
        return Exit.fail(new SqlError({ cause, message: `${text} failed` }))
      }
    }

    const connection: Connection = {
      execute: (text, params, transformRows) =>
        Busy.retry(() => all(text, params), patience).pipe(
          Effect.map((rows) => (transformRows ? transformRows(rows) : rows)),
        ),
      executeUnprepared: (text, params, transformRows) =>
        Effect.try({
          try: () => {
            const statement = db.prepare(text)
            let rows: ReadonlyArray<Driver.Row> = []
            if (statement.reader) rows = statement.all(...params) as ReadonlyArray<Driver.Row>
            else statement.run(...params)
            return transformRows ? transformRows(rows) : rows
          },
          catch: (cause) => Driver.statementFailed(cause, text),
        }),
      executeRaw: (text, params) =>
        Effect.try({
          try: () => {
            const statement = prepared(text)
            return statement.reader ? statement.all(...params) : statement.run(...params)
          },
          catch: (cause) => Driver.statementFailed(cause, text),
        }),
      executeValues: (text, params) =>
        Effect.try({
          try: () => {
            const statement = db.prepare(text)
            if (!statement.reader) {
              statement.run(...params)
              return []
            }
            return statement.raw(true).all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
          },
          catch: (cause) => Driver.statementFailed(cause, text),
        }),
      executeStream: () => Effect.dieMessage("executeStream is not offered on SQLite") as never,
    }

    // The client's own statements hold the lock for their scope, transactions for theirs.
    const reserve = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        lock.take(restore),
        Effect.flatMap(Effect.scope, (scope) =>
          Effect.as(
            Scope.addFinalizer(
              scope,
              Effect.sync(() => lock.release()),
            ),
            connection,
          ),
        ),
      ),
    )
    const client = yield* SqlClient.make({
      acquirer: reserve,
      transactionAcquirer: reserve,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]],
    })

    /** `result` after COMMIT, or ROLLBACK when the transaction failed. */
    const finish = <A, E>(exit: Exit.Exit<A, E>): Exit.Exit<A, E | SqlError> => {
      if (Exit.isFailure(exit)) {
        // A failed ROLLBACK leaves the outcome unknown: its error replaces the verb's.
        const rolledBack = exec("ROLLBACK")
        return Exit.isFailure(rolledBack) ? Exit.failCause(rolledBack.cause) : exit
      }
      const committed = exec("COMMIT")
      if (Exit.isSuccess(committed)) return exit
      // A COMMIT refused as busy leaves the transaction open on the one connection: rolled back here.
      exec("ROLLBACK")
      return Exit.failCause(committed.cause)
    }

    const write = GroupCommit.make({
      lock,
      connection,
      exec,
      inTransaction: () => db.inTransaction,
      busyTimeoutMs: patience,
      // A file deleted or replaced under the server takes every write after it with it: refused
      // before COMMIT, so no write is acknowledged that a restart would not find (one stat a batch).
      beforeCommit: intact,
    })

    const driver: Driver.Driver["Type"] = {
      dialect: "sqlite",
      // Each try takes the lock only for its own call, so a busy wait never holds it.
      run: (text, params) =>
        Effect.uninterruptibleMask((restore) =>
          Busy.retryEffect(
            Effect.suspend(() =>
              lock.held()
                ? Effect.zipRight(
                    lock.take(restore),
                    Effect.sync(() => {
                      try {
                        return all(text, params)
                      } finally {
                        lock.release()
                      }
                    }),
                  )
                : Effect.succeed(all(text, params)),
            ),
            patience,
          ).pipe(Effect.flatten),
        ),
      // The one connection is this fiber's while it is in a transaction on it; with none, a
      // statement needs the lock only while a transaction holds it (see the module comment). A
      // busy answer outside a transaction goes the asynchronous way (`run`), which waits.
      immediate: (text, params, conn) => {
        if (conn === connection) return all(text, params)
        if (conn !== undefined || lock.held()) return undefined
        const exit = all(text, params)
        return Busy.isBusy(exit) ? undefined : exit
      },
      // A write transaction joins the next group commit (GroupCommit); a read transaction, one
      // snapshot, runs on its own.
      transaction: (mode) => (effect) =>
        Effect.uninterruptibleMask((restore) =>
          mode === "write"
            ? write(effect, restore)
            : Effect.zipRight(
                lock.take(restore),
                Effect.suspend(() => {
                  const begun = exec("BEGIN")
                  if (Exit.isFailure(begun)) {
                    lock.release()
                    return Exit.failCause(begun.cause)
                  }
                  return Effect.flatMap(Driver.withConnection(connection, restore, effect), (exit) => {
                    try {
                      return finish(exit)
                    } finally {
                      lock.release()
                    }
                  })
                }),
              ),
        ),
    }
    return Context.make(SqlClient.SqlClient, client).pipe(Context.add(Driver.Driver, driver))
  })

// internal

const CACHE = 500

/** The file's device and inode, or `undefined` when there is none at the path. */
const identity = (filename: string): string | undefined => {
  try {
    const stat = statSync(filename)
    return `${stat.dev}:${stat.ino}`
  } catch {
    return undefined
  }
}

const NO_ROWS: ReadonlyArray<Driver.Row> = []
