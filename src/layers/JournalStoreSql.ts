/**
 * JournalStore over `SqlClient`: one implementation for PostgreSQL and SQLite, assembled from
 * the flows under `journal/` (append, seal, leases, reads, bookkeeping, import) over one set of
 * compiled statements (`journal/Statements`). Append and seal take the run's lease row first (pg
 * `FOR UPDATE`; sqlite already holds the write lock), so fencing, sealing and chaining are
 * decided against one state; where the dialects differ is `internal/Dialect`'s.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { JournalStore } from "../services/JournalStore.js"
import * as Admin from "./journal/Admin.js"
import * as Append from "./journal/Append.js"
import * as Hints from "./journal/Hints.js"
import * as Import from "./journal/Import.js"
import * as Lease from "./journal/Lease.js"
import * as Read from "./journal/Read.js"
import * as Seal from "./journal/Seal.js"
import * as Statements from "./journal/Statements.js"
import * as Write from "./journal/Write.js"

export const make = Effect.gen(function* () {
  const s = yield* Statements.make
  const hints = Hints.make(s.dialect)
  const writes = Write.make(s, hints)
  return JournalStore.of({
    ...Append.make(s, hints, writes),
    ...Lease.make(s),
    ...Seal.make(s, hints, writes),
    ...Read.make(s, hints),
    ...Admin.make(s),
    ...Import.make(s),
  })
})

/** JournalStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<JournalStore, never, SqlClient.SqlClient> = Layer.effect(JournalStore, make)
