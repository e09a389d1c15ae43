/**
 * The stores' `Driver` over the `pg.Pool` that `PgPool` builds: a statement is one pool checkout
 * and one `client.query`, a transaction one checkout for BEGIN … COMMIT. What `@effect/sql-pg`
 * adds around the same calls (a span, a scope, the statement compiler) is what the stores skip.
 */
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import type pg from "pg"
import * as Driver from "./Driver.js"
import type { Checked } from "./PgCheckout.js"
import * as PgCheckout from "./PgCheckout.js"
import * as SharedCommit from "./SharedCommit.js"

/** A transaction connection the stores can send named statements on; `@effect/sql` sees a plain `Connection`. */
export interface Lean extends Connection {
  readonly lean: (
    text: string,
    params: ReadonlyArray<unknown>,
    named: boolean,
  ) => Effect.Effect<ReadonlyArray<Driver.Row>, SqlError>
}

export const isLean = (conn: Connection): conn is Lean => typeof (conn as Partial<Lean>).lean === "function"

export const make = (pool: pg.Pool, sharing: SharedCommit.Options = SharedCommit.DEFAULTS): Driver.Driver["Type"] => {
  const lend = PgCheckout.lend(pool)
  return {
    dialect: "pg",
    // Statements ready while others are on the wire share a round trip and a commit (`SharedCommit`).
    run: SharedCommit.make(lend, alone(lend), nameOf, sharing),
    transaction: (mode) => (effect) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(checkout(lend), (client) => {
          const conn = connection(client)
          const finish = (outcome: "COMMIT" | "ROLLBACK") =>
            Effect.matchEffect(query(client, outcome, [], false), {
              // Whatever failed here, the connection's state is unknown: it leaves the pool.
              onFailure: (e) =>
                Effect.zipRight(
                  Effect.sync(() => client.done(e)),
                  Effect.fail(e),
                ),
              onSuccess: () => Effect.sync(() => client.done()),
            })
          return query(client, BEGIN[mode], [], false).pipe(
            Effect.zipRight(Driver.withConnection(conn, restore, effect)),
            Effect.flatten,
            Effect.exit,
            Effect.flatMap((exit) =>
              Exit.isSuccess(exit)
                ? Effect.as(finish("COMMIT"), exit.value)
                : // A failed BEGIN leaves nothing to roll back; pg answers ROLLBACK then with a warning only.
                  Effect.zipRight(Effect.ignore(finish("ROLLBACK")), exit),
            ),
          )
        }),
      ),
  }
}

// internal

/**
 * One statement on a connection of its own. One callback chain, checkout to release: a fiber
 * suspension each for the checkout and the query, and the `ensuring` between them, cost as much
 * as the rest of a one-row statement's client path. The client goes back in the query's callback
 * whatever the fiber does meanwhile, so an interrupted verb cannot leak it.
 *
 * A statement the server chose as a deadlock's victim is sent again, up to `DEADLOCK_RETRIES`
 * times. Alone, it is its own transaction, which the server rolled back whole, so nothing of it
 * committed and sending it again gives the answer it would have had without the deadlock. Seals
 * make deadlocks ordinary: every seal of a tenant takes its log's one sequence row, and a shared
 * send holds the rows of all its members until its one commit, so instances sealing side by side
 * can meet in a cycle (the bench's four instances waking 10,000 timers met one, and the woken run
 * failed its seal where it now goes on). A statement in a transaction of the caller's is not sent
 * again: the transaction is the caller's to repeat.
 */
const alone =
  (lend: PgCheckout.Lend): SharedCommit.Alone =>
  (text, params, named, done) => {
    const attempt = (retries: number): void =>
      lend(
        (checked) => {
          // pg answers a statement whose parameters it cannot bind twice (at the refusal, then at
          // the server's reply to the Sync it sends anyway): only the first answer counts.
          let answered = false
          checked.client.query(config(text, params, named), (failure: Error | undefined, result: pg.QueryResult) => {
            if (answered) return
            answered = true
            // A failed statement leaves a healthy connection; a dead one is unqueryable, which pg-pool reads on release.
            checked.done()
            if (failure && retries > 0 && isDeadlock(failure)) return attempt(retries - 1)
            done(failure ? Exit.fail(failed(failure, text)) : Exit.succeed(result.rows))
          })
        },
        (error) => done(Exit.fail(error)),
      )
    attempt(DEADLOCK_RETRIES)
  }

/** How often a lone statement chosen as a deadlock's victim is sent again before its refusal stands. */
export const DEADLOCK_RETRIES = 3

/** SQLSTATE 40P01, deadlock_detected: the server rolled the statement's transaction back. */
const isDeadlock = (failure: Error): boolean => (failure as { readonly code?: unknown }).code === "40P01"

/** pg: a read-only transaction on one snapshot, so a case is never assembled from two moments. */
const BEGIN = { write: "BEGIN", read: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" } as const

const checkout = (lend: PgCheckout.Lend) =>
  Effect.async<Checked, SqlError>((resume) =>
    lend(
      (checked) => resume(Effect.succeed(checked)),
      (error) => resume(Effect.fail(error)),
    ),
  )

const failed = (cause: Error, text: string) => Driver.statementFailed(cause, text)

/** Statement names by text: a named statement is parsed and planned once per connection. */
const names = new Map<string, string>()

const nameOf = (text: string): string => {
  let name = names.get(text)
  if (name === undefined) {
    name = `agentplane_${names.size + 1}`
    names.set(text, name)
  }
  return name
}

const config = (text: string, params: ReadonlyArray<unknown>, named: boolean): pg.QueryConfig =>
  named ? { name: nameOf(text), text, values: params as Array<unknown> } : { text, values: params as Array<unknown> }

const query = (checked: Checked, text: string, params: ReadonlyArray<unknown>, named: boolean) =>
  Effect.async<ReadonlyArray<Driver.Row>, SqlError>((resume) => {
    checked.client.query(config(text, params, named), (err: Error | undefined, result: pg.QueryResult) =>
      resume(err ? Effect.fail(failed(err, text)) : Effect.succeed(result.rows)),
    )
  })

/** The transaction's connection as `@effect/sql` sees it, so the client's own statements join it. */
const connection = (checked: Checked): Lean => {
  const rows: Lean["execute"] = (text, params, transformRows) =>
    Effect.map(query(checked, text, params, false), (r) => (transformRows ? transformRows(r) : r))
  return {
    lean: (text, params, named) => query(checked, text, params, named),
    execute: rows,
    executeUnprepared: rows,
    executeRaw: (text, params) =>
      Effect.async<unknown, SqlError>((resume) => {
        checked.client.query({ text, values: params as Array<unknown> }, (err: Error | undefined, result: unknown) =>
          resume(err ? Effect.fail(failed(err, text)) : Effect.succeed(result)),
        )
      }),
    executeValues: (text, params) =>
      Effect.async<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>((resume) => {
        checked.client.query(
          { text, values: params as Array<unknown>, rowMode: "array" },
          (err: Error | undefined, result: pg.QueryResult) =>
            resume(err ? Effect.fail(failed(err, text)) : Effect.succeed(result.rows as Array<Array<unknown>>)),
        )
      }),
    executeStream: () => Effect.dieMessage("streaming is not offered inside a store transaction") as never,
  }
}
