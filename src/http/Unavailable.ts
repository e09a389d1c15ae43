/**
 * The 503 a client receives for a store outage (§8.2): what kind of outage, so it can decide how
 * to retry, and never the driver's text (which names indexes, hosts and statements). The cause
 * stays in the server's log.
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { type Backend, BackendReason } from "../errors/StoreError.js"

/** The outage's kind (`BackendReason`: what each means is stated there). */
export const Reason = BackendReason
export type Reason = BackendReason

export class Unavailable extends Schema.TaggedError<Unavailable>()(
  "Unavailable",
  { reason: Reason, message: Schema.String },
  HttpApiSchema.annotations({ status: 503 }),
) {}

/** The client's view of `error`: the reason the layers gave it and a fixed sentence, never its detail. */
export const fromBackend = (error: Backend): Unavailable =>
  new Unavailable({ reason: error.reason, message: `${MESSAGES[error.reason]}; retry later` })

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
