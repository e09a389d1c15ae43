/**
 * JournalArchive over `SqlClient`, one statement for both dialects. The rows skip Schema: at a
 * million records decoding each row through a Schema struct was most of an export's time (issue
 * 18), and the export checks every byte that matters (seq, digests, chain, body) itself. Only
 * the column types are checked here, so a row of the wrong shape is still `Corrupt`, never a
 * default.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { Tenant } from "../domain/Tenant.js"
import { Corrupt } from "../errors/StoreError.js"
import { JournalArchive, type StoredRecord } from "../services/JournalArchive.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return JournalArchive.of({
    page: (run, from, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Served by the journal's primary key (tenant, run_id, seq): a range scan in seq order.
        const rows = yield* sql<globalThis.Record<string, unknown>>`
          SELECT seq, prev_hash, hash, raw, key_id, signature FROM journal
           WHERE tenant = ${tenant} AND run_id = ${run} AND seq >= ${Math.floor(from)}
           ORDER BY seq LIMIT ${Sql.clampLimit(limit)}`
        const out: Array<StoredRecord> = new Array(rows.length)
        for (let i = 0; i < rows.length; i++) {
          const record = toStored(rows[i] ?? {})
          if (record instanceof Corrupt) return yield* record
          out[i] = record
        }
        return out
      }).pipe(Sql.orBackend),
  })
})

/** JournalArchive on whichever `SqlClient` is provided. */
export const layer: Layer.Layer<JournalArchive, never, SqlClient.SqlClient> = Layer.effect(JournalArchive, make)

// internal

/** pg returns BIGINT as decimal text, SQLite as a number. */
const seqOf = (value: unknown): number =>
  typeof value === "string" && /^\d{1,16}$/.test(value) ? Number(value) : (value as number)

const toStored = (row: globalThis.Record<string, unknown>): StoredRecord | Corrupt => {
  const seq = seqOf(row.seq)
  if (!Number.isSafeInteger(seq)) return new Corrupt({ detail: "journal: seq is not a safe integer", seq: 0 })
  const bad = (column: string, type = "bytes") =>
    new Corrupt({ detail: `journal: ${column} is not ${type}`, seq: Math.max(seq, 0) })
  const { prev_hash, hash, raw, key_id, signature } = row
  if (!(prev_hash instanceof Uint8Array)) return bad("prev_hash")
  if (!(hash instanceof Uint8Array)) return bad("hash")
  if (!(raw instanceof Uint8Array)) return bad("raw")
  if (key_id !== null && typeof key_id !== "string") return bad("key_id", "text")
  if (signature !== null && typeof signature !== "string") return bad("signature", "text")
  return { seq, prevHash: prev_hash, hash, raw, keyId: key_id, signature }
}
