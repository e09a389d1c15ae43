/**
 * pg: what one process remembers of the runs it writes, so a run's next write can be one
 * statement: the head it last wrote or read for each run, and which runs have an append or a
 * seal under way here. sqlite reads its state under the write lock anyway and keeps none.
 */
import { Effect } from "effect"
import type { RunId } from "../../domain/Ids.js"
import type * as Journal from "../../domain/Journal.js"
import type { Dialect } from "../internal/Dialect.js"

/** The hints of one journal store (see the module comment). */
export type Hints = ReturnType<typeof make>

export const make = (dialect: Dialect) => {
  /**
   * pg: the head this process last wrote or read for each run, by `hintKey`, at most HINTS of
   * them. An append built on it is one statement that checks it (`writeOnHint`) instead of a state
   * read and then the statement: a run's next write usually follows its last one here. Only a
   * guess: a head another instance moved, a lapsed epoch or a seal makes that statement write
   * nothing, and the append goes the long way. sqlite reads its state under the write lock
   * anyway and keeps none.
   */
  const hints = new Map<string, Journal.Head>()

  /** The head after `records`, remembered for the run's next write (pg); an empty list leaves the hint as it is. */
  const remember = (tenant: string, run: RunId, records: ReadonlyArray<Journal.Record>) => {
    const top = records[records.length - 1]
    if (!dialect.writableCte || top === undefined) return
    const key = hintKey(tenant, run)
    hints.delete(key)
    if (hints.size >= HINTS) {
      // The oldest remembered run goes first (a Map iterates in insertion order).
      const oldest = hints.keys().next()
      if (oldest.done !== true) hints.delete(oldest.value)
    }
    hints.set(key, { seq: top.seq, hash: top.hash })
  }

  const forget = (tenant: string, run: RunId) => Effect.sync(() => hints.delete(hintKey(tenant, run)))

  /** pg: appends and seals of each run under way in this process, by `hintKey`. */
  const underWay = new Map<string, number>()

  /** `use` counted as under way for the run; `alone` when nothing else of the run is (pg; sqlite: always false, it keeps no hints). */
  const writing = <A, E, R>(tenant: string, run: RunId, use: (alone: boolean) => Effect.Effect<A, E, R>) =>
    dialect.writableCte
      ? Effect.acquireUseRelease(
          Effect.sync(() => {
            const key = hintKey(tenant, run)
            const n = underWay.get(key) ?? 0
            underWay.set(key, n + 1)
            return { key, alone: n === 0 }
          }),
          ({ alone }) => use(alone),
          ({ key }) =>
            Effect.sync(() => {
              const n = (underWay.get(key) ?? 1) - 1
              if (n <= 0) underWay.delete(key)
              else underWay.set(key, n)
            }),
        )
      : use(false)

  return {
    /** The head remembered for the run, if any. */
    get: (tenant: string, run: RunId) => hints.get(hintKey(tenant, run)),
    /** Drops the run's hint: the statement built on it found the head, epoch or seal moved. */
    drop: (tenant: string, run: RunId): void => {
      hints.delete(hintKey(tenant, run))
    },
    remember,
    forget,
    writing,
  }
}

/** Runs whose head `hints` remembers: about 200 bytes each. */
const HINTS = 10_000

const hintKey = (tenant: string, run: RunId) => `${tenant}\u0000${run}`
