/**
 * Commits shared across runs (pg): autocommitted statements of different verbs that are ready at
 * the same moment go to PostgreSQL in one round trip and one commit.
 *
 * Why: at 16 runs side by side a run's three durable points cost its process more in round trips
 * (a socket write, a wake-up, a callback chain each) than in everything else it does, and the
 * server a commit (a WAL flush) each. Sixteen runs' statements in one round trip pay those once.
 *
 * How: at most `inFlight` sends are on the wire at a time. A statement that finds a free place
 * goes at once, alone, exactly as before (a lone run pays no extra latency). One that finds
 * every place taken waits in a queue, and when a send comes back, everything queued goes as one
 * **shared send**: each statement's Parse (skipped when the connection has its named statement
 * already), Bind, Describe and Execute, then a single Sync. The protocol runs the statements
 * before a Sync as one implicit transaction, committed at the Sync, so the members commit
 * together or not at all, and each is answered after that commit with its own rows.
 *
 * A statement a member's turn refuses (a unique violation, a lock timeout, the opening
 * statement's deliberate cast error) aborts the shared transaction: nothing of it committed, so
 * every member is sent again, alone, and gets the answer it would have had without company.
 * A failure that leaves the outcome unknown (the connection lost, a FATAL error) is every
 * member's answer, as it would have been for a lone statement.
 *
 * A member sees the rows the members before it wrote, uncommitted; that is safe for the stores'
 * statements because the runtime never has two writes of one run in flight at once, so members
 * touch different runs' rows, and because nothing is answered before the commit.
 */
import { createRequire } from "node:module"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import pg from "pg"
import type * as Driver from "./Driver.js"
import type * as PgCheckout from "./PgCheckout.js"

/** pg's own mapping of a parameter to its wire text, so a shared statement binds exactly what a lone one would. */
const { prepareValue } = createRequire(import.meta.url)("pg/lib/utils.js") as {
  readonly prepareValue: (value: unknown) => unknown
}

export interface Options {
  /** Sends on the wire at once; past this, statements wait for the next shared send. */
  readonly inFlight: number
  /** Statements one shared send carries at most; the rest wait for the next. */
  readonly members: number
}

export const DEFAULTS: Options = { inFlight: 2, members: 64 }

/** A statement sent alone on a connection of its own; `done` is called once with its outcome. */
export type Alone = (
  text: string,
  params: ReadonlyArray<unknown>,
  named: boolean,
  done: (exit: Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>) => void,
) => void

/** `run` of the pg `Driver`: one autocommitted statement, sent alone or in a shared send. */
export const make = (
  lend: PgCheckout.Lend,
  alone: Alone,
  nameOf: (text: string) => string,
  options: Options = DEFAULTS,
): Driver.Driver["Type"]["run"] => {
  let sending = 0
  const queue: Array<Member> = []

  const finished = () => {
    sending--
    pump()
  }

  /** Sends what waits while there is room: one member alone, several shared. */
  const pump = () => {
    while (sending < options.inFlight && queue.length > 0) {
      const batch: Array<Member> = []
      while (batch.length < options.members && queue.length > 0) {
        const m = queue.shift() as Member
        if (m.state === "queued") {
          m.state = "sent"
          batch.push(m)
        }
      }
      const first = batch[0]
      if (first === undefined) return
      sending++
      if (batch.length === 1) alone(first.text, first.params, first.named, answer(first, finished))
      else shared(batch)
    }
  }

  /** `batch` in one round trip and one commit; after a refusal, each member alone. */
  const shared = (batch: ReadonlyArray<Member>) =>
    lend(
      (checked) => {
        const send = new SharedSend(batch, nameOf, (failure, results) => {
          // A failure other than a statement's ERROR leaves the session in doubt: it leaves the pool.
          checked.done(failure === undefined || isRolledBack(failure) ? undefined : failure)
          if (failure === undefined) {
            batch.forEach((m, i) => {
              m.resume(results[i] ?? Exit.succeed([]))
            })
            finished()
          } else if (isRolledBack(failure)) {
            // Nothing committed: each member again, alone; the place is given back after the last.
            let left = batch.length
            const one = () => {
              if (--left === 0) finished()
            }
            for (const m of batch) alone(m.text, m.params, m.named, answer(m, one))
          } else {
            const lost = Exit.fail(new SqlError({ cause: failure, message: "Failed to execute statement" }))
            for (const m of batch) m.resume(lost)
            finished()
          }
        })
        checked.client.query(send as unknown as pg.QueryConfig)
      },
      (error) => {
        for (const m of batch) m.resume(Exit.fail(error))
        finished()
      },
    )

  return (text, params, named) =>
    Effect.async<ReadonlyArray<Driver.Row>, SqlError>((resume) => {
      const me: Member = { text, params, named, resume, state: "queued" }
      if (sending < options.inFlight && queue.length === 0) {
        me.state = "sent"
        sending++
        alone(text, params, named, answer(me, finished))
        return
      }
      queue.push(me)
      // Interrupted while queued: never sent. Once sent, its answer is ignored.
      return Effect.sync(() => {
        if (me.state === "queued") me.state = "gone"
      })
    })
}

// internal

interface Member {
  readonly text: string
  readonly params: ReadonlyArray<unknown>
  readonly named: boolean
  readonly resume: (exit: Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>) => void
  /** `queued` until a send takes it (`sent`); `gone` when its caller left first. */
  state: "queued" | "sent" | "gone"
}

const answer =
  (m: Member, then: () => void) =>
  (exit: Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>): void => {
    m.resume(exit)
    then()
  }

/** A shared send refused before anything was written; its members go again alone. */
class NotSent extends Error {}

/** The parameters are mapped already (`SharedSend.submit`). */
const mapped = (value: unknown): unknown => value

/**
 * Nothing of the send committed: it was never written (`NotSent`), or an ERROR from the server
 * aborted the implicit transaction before its Sync committed it.
 * FATAL and PANIC end the session, and a failure with no severity is the client's own (the
 * socket lost): the commit may have happened, so the outcome is unknown.
 */
const isRolledBack = (failure: Error): boolean =>
  failure instanceof NotSent || (failure instanceof pg.DatabaseError && failure.severity === "ERROR")

/** The parts of pg's connection a shared send writes on. */
interface Wire {
  readonly parsedStatements: Record<string, string>
  readonly stream: { cork?: () => void; uncork?: () => void }
  readonly parse: (m: { text: string; name: string }) => void
  readonly bind: (m: {
    portal: string
    statement: string
    values: ReadonlyArray<unknown>
    binary: boolean
    valueMapper: (value: unknown) => unknown
  }) => void
  readonly describe: (m: { type: "P"; name: string }) => void
  readonly execute: (m: { portal: string }) => void
  readonly sync: () => void
  readonly sendCopyFail: (message: string) => void
}

interface FieldsMessage {
  readonly fields: ReadonlyArray<unknown>
}

/** pg's result of one statement, which parses rows with the same type parsers as a lone query. */
interface Result {
  readonly rows: Array<Driver.Row>
  readonly addFields: (fields: ReadonlyArray<unknown>) => void
  readonly parseRow: (fields: ReadonlyArray<unknown>) => Driver.Row
}

const newResult = (): Result => new (pg as unknown as { Result: new () => Result }).Result()

/**
 * A pg "submittable" (the interface pg-cursor uses): writes every member's statement and one
 * Sync, and reads the answers back in order, one statement's rows until its CommandComplete.
 */
class SharedSend {
  private at = 0
  private readonly results: Array<Result>
  private unreadable: Error | undefined
  private settled = false

  constructor(
    private readonly batch: ReadonlyArray<Member>,
    private readonly nameOf: (text: string) => string,
    private readonly done: (
      failure: Error | undefined,
      results: ReadonlyArray<Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>>,
    ) => void,
  ) {
    this.results = batch.map(newResult)
  }

  submit(connection: Wire): Error | null {
    // Every parameter mapped before anything is written: a value pg cannot send (a circular
    // object) must stop the send whole, not after earlier members' statements already ran.
    let values: ReadonlyArray<ReadonlyArray<unknown>>
    try {
      values = this.batch.map((m) => m.params.map((v) => prepareValue(v)))
    } catch (e) {
      return new NotSent(e instanceof Error ? e.message : String(e))
    }
    connection.stream.cork?.()
    try {
      for (const [i, m] of this.batch.entries()) {
        // A named statement the connection has parsed is bound by name; any other is parsed as the
        // unnamed statement, which each Parse replaces, so a shared send leaves no names to track.
        const name = m.named ? this.nameOf(m.text) : ""
        const parsed = name !== "" && connection.parsedStatements[name] === m.text
        if (!parsed) connection.parse({ text: m.text, name: "" })
        connection.bind({
          portal: "",
          statement: parsed ? name : "",
          values: values[i] ?? [],
          binary: false,
          valueMapper: mapped,
        })
        connection.describe({ type: "P", name: "" })
        connection.execute({ portal: "" })
      }
      connection.sync()
    } finally {
      connection.stream.uncork?.()
    }
    return null
  }

  handleRowDescription(message: FieldsMessage) {
    this.results[this.at]?.addFields(message.fields)
  }

  handleDataRow(message: FieldsMessage) {
    const result = this.results[this.at]
    if (result === undefined || this.unreadable !== undefined) return
    try {
      result.rows.push(result.parseRow(message.fields))
    } catch (e) {
      this.unreadable = e instanceof Error ? e : new Error(String(e))
    }
  }

  handleCommandComplete() {
    this.at++
  }

  handleEmptyQuery() {
    this.at++
  }

  /** `done`, once: pg reports a statement's error and then, for a dying socket, may report again. */
  private finish(failure: Error | undefined, results: ReadonlyArray<Exit.Exit<ReadonlyArray<Driver.Row>, SqlError>>) {
    if (this.settled) return
    this.settled = true
    this.done(failure, results)
  }

  handlePortalSuspended() {}

  handleCopyInResponse(connection: Wire) {
    connection.sendCopyFail("a shared send copies nothing")
  }

  handleCopyData() {}

  handleError(failure: Error) {
    // A send refused at `submit` is reported on the next tick, and pg marks the client ready
    // after this returns: answering (and so releasing the client) waits until it has.
    if (failure instanceof NotSent) setImmediate(() => this.finish(failure, []))
    else this.finish(failure, [])
  }

  handleReadyForQuery() {
    // Committed: a row pg could not parse is unreadable, not unwritten, so it is an unknown outcome.
    const unreadable = this.unreadable
    this.finish(
      undefined,
      this.results.map((r) =>
        unreadable === undefined
          ? Exit.succeed(r.rows)
          : Exit.fail(new SqlError({ cause: unreadable, message: "Failed to read a shared statement's rows" })),
      ),
    )
  }
}
