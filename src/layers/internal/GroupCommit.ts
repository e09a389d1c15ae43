/**
 * Group commit for the SQLite connection: store write transactions that are ready at the same
 * moment share one BEGIN IMMEDIATE … COMMIT, each in a savepoint of its own.
 *
 * Why: a COMMIT writes every page its transaction touched to the WAL, and every 1,000 pages the
 * WAL is checkpointed back into the file. A timer wake-up's commit touches about 18 pages (the
 * journal's tail and its indexes, the activity, seal, outcome, lease and timer rows); it took
 * 57 µs at the median and 165 µs on average with the checkpoints, a seventh of the wake-up.
 * Wake-ups that run side by side touch mostly the same tail pages, so a shared COMMIT writes
 * them once (16 wake-ups at a time: 820–837 → 965–969 wake-ups/s, 8,000 due, on one machine).
 *
 * How: the first transaction to arrive leads. It yields one turn of the event loop (`turn`), so
 * that the fibers already ready reach their own transactions and join its batch, then takes the lock and
 * runs every member's body in turn, on its own fiber but in the member's context, each between
 * SAVEPOINT and RELEASE (ROLLBACK TO on failure, so a member's failure undoes only its own
 * writes), and commits once. The write lock is held only while the leader runs, never across a
 * turn of the scheduler: another connection in the same process (a second instance, the
 * readiness probe) waits synchronously on a busy SQLite file, and would block the leader too. Nor
 * is it held while the leader waits for another process's write lock: BEGIN IMMEDIATE is tried
 * again after a timer, the lock given back in between (`Busy`).
 *
 * Every member answers after the COMMIT, with its own exit if the COMMIT succeeded and with the
 * COMMIT's failure otherwise: a body may have read what an earlier member wrote, so even a
 * member's own refusal is not known to be true until that COMMIT holds. A member interrupted
 * while it waits is skipped if its body has not run; once run, its writes commit with the rest.
 */
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Deferred, Effect, Exit, FiberRef } from "effect"
import * as Busy from "./Busy.js"
import type * as Lock from "./Lock.js"

export interface Options {
  readonly lock: Lock.Lock
  readonly connection: Connection
  /** Runs a statement with no parameters on the connection. */
  readonly exec: (text: string) => Exit.Exit<void, SqlError>
  /** Whether the connection is inside a transaction (SQLite rolls a transaction back by itself after some errors). */
  readonly inTransaction: () => boolean
  /** How long a batch tries again when BEGIN IMMEDIATE finds another process's write lock, milliseconds. */
  readonly busyTimeoutMs?: number
  /** Checked before COMMIT: a failure (the file is gone) rolls the batch back and answers every member with it. */
  readonly beforeCommit?: () => Exit.Exit<void, SqlError>
}

type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** A write transaction `effect`, run in the next batch; call inside `uninterruptibleMask`, with its `restore`. */
export type Write = <A, E, R>(effect: Effect.Effect<A, E, R>, restore: Restore) => Effect.Effect<A, E | SqlError, R>

export const make = (options: Options): Write => {
  const { lock, connection, exec } = options
  /** The batch still taking members: its leader has not taken the lock yet. */
  let forming: Array<Member> | undefined

  /**
   * Runs `batch` holding the lock: BEGIN, each member in a savepoint, one COMMIT, every answer, the
   * lock given back. A BEGIN IMMEDIATE that finds another process's write lock gives the process
   * lock back, sleeps on a timer and tries again (`Busy`), until `busyTimeoutMs` from `since`.
   */
  const run = (batch: ReadonlyArray<Member>, since = Date.now()): Effect.Effect<void> =>
    Effect.suspend(() => {
      const begun = exec(BEGIN)
      if (Exit.isFailure(begun)) {
        const waited = Date.now() - since
        if (Busy.isBusy(begun) && waited < (options.busyTimeoutMs ?? 0)) {
          lock.release()
          const delay = Math.min(Busy.MAX_DELAY_MS, Math.max(1, waited))
          return Effect.zipRight(
            Effect.zipRight(Busy.sleep(delay), lock.take(unmasked)),
            Effect.suspend(() => run(batch, since)),
          )
        }
        end(batch, begun)
        lock.release()
        return Effect.void
      }
      return Effect.flatMap(runFrom(batch, 0), (restart) => {
        if (restart) {
          // SQLite rolled the shared transaction back itself: the members that ran before the
          // one whose statement did that lost their writes with it, unanswered, so they run
          // again in a transaction of their own, as if the refused member had never joined.
          for (const m of batch) {
            if (m.state === "ran") {
              m.state = "waiting"
              m.exit = undefined
            }
          }
          return run(batch, Date.now())
        }
        const intact = doubt === undefined ? (options.beforeCommit?.() ?? Exit.void) : Exit.void
        if (Exit.isFailure(intact)) {
          exec("ROLLBACK")
          end(batch, intact)
        } else if (doubt !== undefined) end(batch, doubt)
        else {
          const committed = exec("COMMIT")
          // A COMMIT refused as busy leaves the transaction open on the one connection.
          if (Exit.isFailure(committed) && options.inTransaction()) exec("ROLLBACK")
          end(batch, committed)
        }
        // Given back last: `end` may still roll the shared transaction back on the connection.
        lock.release()
        return Effect.void
      })
    })

  /**
   * The members of `batch` from `i` on, one after another (a body's exit is captured, so none
   * fails); true when one of them ended the shared transaction and the batch must begin again.
   */
  const runFrom = (batch: ReadonlyArray<Member>, i: number): Effect.Effect<boolean> => {
    const m = batch[i]
    if (m === undefined) return Effect.succeed(false)
    // Each member's state is read when its turn comes: one may have left while an earlier ran.
    if (m.state !== "waiting") return runFrom(batch, i + 1)
    return Effect.flatMap(runMember(m), (ended) => (ended ? Effect.succeed(true) : runFrom(batch, i + 1)))
  }

  /** Set when a savepoint could not be released or undone: the shared transaction is in doubt and is rolled back whole. */
  let doubt: Exit.Exit<void, SqlError> | undefined

  /**
   * One member in its savepoint; true when its body's failure ended the shared transaction
   * (a trigger's RAISE(ROLLBACK), or an error after which SQLite rolls back by itself). That
   * member is answered at once with its own exit, which names its statement and the cause: no
   * COMMIT can change it, since nothing of the transaction it ran in is left.
   */
  const runMember = (m: Member): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      m.state = "ran"
      if (doubt !== undefined) return Effect.succeed(false)
      const saved = exec(SAVEPOINT)
      if (Exit.isFailure(saved)) {
        doubt = saved
        return Effect.succeed(false)
      }
      return Effect.map(inContext(m, connection), (exit) => {
        m.exit = exit
        if (Exit.isFailure(exit) && !options.inTransaction()) {
          answer(m, exit)
          return true
        }
        const kept = Exit.isSuccess(exit) ? exec(RELEASE) : undo()
        if (Exit.isFailure(kept)) doubt = kept
        return false
      })
    })

  /** Settles a member's answer: the leader reads `result`, a member that joined waits on its Deferred. */
  const answer = (m: Member, result: Exit.Exit<unknown, unknown>): void => {
    m.state = "answered"
    m.result = result
    if (m.answer !== undefined) Deferred.unsafeDone(m.answer, result)
  }

  const undo = (): Exit.Exit<void, SqlError> => {
    const undone = exec(ROLLBACK_TO)
    return Exit.isFailure(undone) ? undone : exec(RELEASE)
  }

  /** Answers every member that ran, after the batch's `outcome` (its COMMIT, or the failure that ended it). */
  const end = (batch: ReadonlyArray<Member>, outcome: Exit.Exit<void, SqlError>): void => {
    if (doubt !== undefined && options.inTransaction()) exec("ROLLBACK")
    doubt = undefined
    for (const m of batch) {
      if (m.state === "gone" || m.state === "answered") continue
      answer(m, Exit.isFailure(outcome) ? outcome : (m.exit ?? outcome))
    }
  }

  return <A, E, R>(effect: Effect.Effect<A, E, R>, restore: Restore) =>
    Effect.withFiberRuntime<A, E | SqlError, R>((fiber) => {
      const me: Member = {
        body: effect as Effect.Effect<unknown, unknown>,
        context: fiber.currentContext,
        answer: undefined,
        state: "waiting",
        exit: undefined,
        result: undefined,
      }
      if (forming !== undefined && forming.length < MEMBERS) {
        forming.push(me)
        const answer = Deferred.unsafeMake<unknown, unknown>(fiber.id())
        me.answer = answer
        // Interrupted while waiting: skipped if the leader has not run its body yet.
        return restore(Deferred.await(answer) as Effect.Effect<A, E | SqlError>).pipe(
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              if (me.state === "waiting") me.state = "gone"
            }),
          ),
        )
      }
      const batch: Array<Member> = [me]
      forming = batch
      // The leader's own answer is read off its member once the batch ended: no Deferred to wait on.
      const mine = Effect.suspend(() => me.result as Exit.Exit<A, E | SqlError>)
      return Effect.zipRight(
        turn,
        Effect.suspend(() => {
          if (forming === batch) forming = undefined
          if (lock.tryTake()) return Effect.zipRight(run(batch), mine)
          return Effect.matchCauseEffect(lock.take(restore), {
            onSuccess: () => Effect.zipRight(run(batch), mine),
            // The leader was interrupted while it waited for the lock: its own body never runs,
            // and the members who joined it are led by a fiber of their own.
            onFailure: (cause) =>
              Effect.zipRight(
                Effect.suspend(() => {
                  me.state = "gone"
                  return batch.some((m) => m.state === "waiting")
                    ? Effect.forkDaemon(Effect.zipRight(lock.take(unmasked), run(batch)))
                    : Effect.void
                }),
                Effect.failCause(cause),
              ),
          })
        }),
      )
    })
}

// internal

/** sqlite: IMMEDIATE takes the write lock at BEGIN, so a second process waits there instead of failing to upgrade mid-batch. */
const BEGIN = "BEGIN IMMEDIATE"

/** The savepoint each member writes in; members run one after another, so one name serves. */
const SAVEPOINT = "SAVEPOINT member"
const RELEASE = "RELEASE member"
const ROLLBACK_TO = "ROLLBACK TO member"

/**
 * Members one COMMIT serves at most. A batch holds SQLite's write lock (and so other processes'
 * writers) while its members run; the cap bounds how long.
 */
const MEMBERS = 64

/** A write transaction in a batch: its body, the context it runs in, its answer, how far it got. */
interface Member {
  readonly body: Effect.Effect<unknown, unknown>
  readonly context: Context.Context<never>
  /** Where a member that joined another's batch waits for its answer; the leader reads `result`. */
  answer: Deferred.Deferred<unknown, unknown> | undefined
  /** `waiting` until its body runs (`ran`), `answered` once its answer is settled; `gone` when its caller left first. */
  state: "waiting" | "ran" | "answered" | "gone"
  /** Its body's exit, once run. */
  exit: Exit.Exit<unknown, unknown> | undefined
  /** Its answer, once the batch ended. */
  result: Exit.Exit<unknown, unknown> | undefined
}

/** A member's body on the leader's fiber, in the member's own context with the transaction's connection in it; its exit. */
const inContext = (m: Member, conn: Connection): Effect.Effect<Exit.Exit<unknown, unknown>> =>
  Effect.withFiberRuntime((fiber) => {
    const outer = fiber.currentContext
    return Effect.zipRight(
      FiberRef.set(FiberRef.currentContext, Context.add(m.context, SqlClient.TransactionConnection, [conn, 0])),
      Effect.flatMap(Effect.exit(m.body), (exit) => Effect.as(FiberRef.set(FiberRef.currentContext, outer), exit)),
    )
  })

/**
 * A whole turn of Node's event loop, taken by every leader before it forms its batch. Why not a
 * turn of Effect's scheduler (`yieldNow`): SQLite's statements run synchronously, so runs that
 * go back to back, each woken by the last one's answer, would keep the loop in microtasks and
 * never let it reach its timers or its sockets: an Effect sleep (a busy retry, the sweeper's
 * next pass, a lease renewal) and an HTTP request would wait until the work ran out. After a
 * `setImmediate` the fibers already ready have reached their transactions too, so the batch is
 * at least as full as after a scheduler turn.
 */
const turn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** The lock taken by a fiber that leads for others is not given up on interruption. */
const unmasked: Restore = (effect) => effect
