/**
 * The 503 a client receives for a store outage (§8.2): what kind of outage, so it can decide how
 * to retry, and never the driver's text (which names indexes, hosts and statements). The cause
 * stays in the server's log.
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import type { Backend } from "../errors/StoreError.js"

/**
 * `lock_timeout`: a lock was held elsewhere too long; `statement_timeout`: a statement ran too
 * long; `pool_exhausted`: every connection was busy; `connect_failed`: the database could not be
 * reached; `busy`: another process held SQLite's write lock; `store_gone`: the SQLite file was
 * deleted or replaced under the server, so nothing written since would survive; `backend`: any
 * other failure.
 */
export const Reason = Schema.Literal(
  "lock_timeout",
  "statement_timeout",
  "pool_exhausted",
  "connect_failed",
  "busy",
  "store_gone",
  "backend",
)
export type Reason = typeof Reason.Type

export class Unavailable extends Schema.TaggedError<Unavailable>()(
  "Unavailable",
  { reason: Reason, message: Schema.String },
  HttpApiSchema.annotations({ status: 503 }),
) {}

/** The client's view of `error`: its reason (the detail's leading word, §layers `Sql.Reason`) and a fixed sentence. */
export const fromBackend = (error: Backend): Unavailable => {
  const lead = /^([a-z_]+): /.exec(error.detail)?.[1]
  const reason = Schema.is(Reason)(lead) ? lead : "backend"
  return new Unavailable({ reason, message: `${MESSAGES[reason]}; retry later` })
}

// internal

const MESSAGES: Readonly<Record<Reason, string>> = {
  lock_timeout: "the store waited too long for a lock",
  statement_timeout: "the store took too long to answer",
  pool_exhausted: "every store connection is busy",
  connect_failed: "the store cannot be reached",
  busy: "the store is locked by another process",
  store_gone: "the store's file was deleted or replaced under the server; an operator must restart it",
  backend: "the store failed",
}
