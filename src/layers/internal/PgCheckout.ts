/**
 * A pooled pg client lent out for one statement or one transaction. While it is out, an error
 * event of its socket is kept (an unheard error event would end the process) and passed to the
 * release, so pg-pool drops it; the release happens once, whoever calls it again.
 */
import { SqlError } from "@effect/sql/SqlError"
import type pg from "pg"

export interface Checked {
  /** Back to the pool once: with an error, the connection is dropped instead of reused. */
  readonly done: (error?: Error) => void
  readonly client: pg.PoolClient
}

/** Lends a client of `pool` to `use`, or tells `refused` why none could be had. */
export type Lend = (use: (checked: Checked) => void, refused: (error: SqlError) => void) => void

export const lend =
  (pool: pg.Pool): Lend =>
  (use, refused) =>
    pool.connect((err, client) => {
      if (err !== undefined || client === undefined) {
        refused(new SqlError({ cause: err, message: "Failed to acquire connection" }))
        return
      }
      let broken: Error | undefined
      let released = false
      const onError = (e: Error) => {
        broken = e
      }
      client.on("error", onError)
      use({
        client,
        done: (error) => {
          if (released) return
          released = true
          client.off("error", onError)
          client.release(error ?? broken)
        },
      })
    })
