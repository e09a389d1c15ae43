/**
 * The TaskStore battery (§5.4): every contract sentence, run against any backend.
 */
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { Backend } from "../support/Backend.js"
import { claims } from "./task/Claims.js"
import { damage } from "./task/Damage.js"
import { type Explain, queue } from "./task/Queue.js"
import { races } from "./task/Races.js"
import { records } from "./task/Records.js"
import { tenancy } from "./task/Tenancy.js"

export interface Options {
  /** How to ask the backend's planner for a statement's plan; where given, the battery checks the queue's index. */
  readonly explain?: Explain
}

/** PostgreSQL's plan for a statement, one line per plan node. */
export const postgresExplain: Explain = (statement) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`EXPLAIN ${statement}`
    return Schema.decodeUnknownSync(Schema.Array(Schema.Struct({ "QUERY PLAN": Schema.String })))(rows)
      .map((r) => r["QUERY PLAN"])
      .join("\n")
  })

export const suite = (backend: Backend, options: Options = {}) =>
  describe("TaskStore", () => {
    // Real databases and real time: the TestClock would only stall the driver's timers.
    layer(backend.layer, { excludeTestServices: true })((it) => {
      records(it.effect)
      claims(it.effect)
      queue(it.effect, options.explain)
      tenancy(it.effect)
      damage(it.effect)
      races(it.effect, backend)
    })
  })
