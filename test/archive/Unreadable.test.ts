/**
 * A run the store cannot read in full is listed in the trailer with the first seq that could not
 * be exported, its earlier records are exported, the export goes on with the other runs, and
 * restore refuses the result. The damage is planted with raw SQL, so this runs where rows exist.
 */
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Option, Stream } from "effect"
import { inject } from "vitest"
import * as Restore from "../../src/archive/Restore.js"
import * as Verify from "../../src/archive/Verify.js"
import * as Digest from "../../src/domain/Digest.js"
import { Tenant } from "../../src/domain/Tenant.js"
import * as JournalArchiveSql from "../../src/layers/JournalArchiveSql.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { as, exportLines, seed } from "./Support.js"

for (const backend of [Backend.sqlite(), Backend.postgres(inject("pgUrl"))]) {
  const sql = Option.getOrThrow(backend.sql)
  describe(backend.name, () => {
    layer(sql.layer, { excludeTestServices: true })((it) => {
      it.effect.each([
        ["a changed byte of raw", "hash", "the store's pages"],
        ["a body that does not decode", "decode", "the store's pages"],
        ["a changed byte of raw", "hash", "the undecoded read path"],
        ["a body that does not decode", "decode", "the undecoded read path"],
        ["a body that names another seq, its hash recomputed", "renamed", "the undecoded read path"],
      ] as const)(
        "%s (%s), read through %s: the run is listed unreadable from that seq, the rest exported, restore refuses",
        ([, how, path]) =>
          Effect.gen(function* () {
            const tenant = Backend.freshTenant()
            const seeded = yield* seed(40).pipe(as(tenant))
            const long = seeded.runs[2] ?? ""
            const db = yield* SqlClient.SqlClient
            const [row] = yield* db<{
              raw: Uint8Array
            }>`SELECT raw FROM journal WHERE tenant = ${tenant} AND run_id = ${long} AND seq = 7`
            const raw = Buffer.from(row?.raw ?? [])
            const planted =
              how === "hash"
                ? Buffer.from(raw.toString("utf8").replace("note 7", "note 8"))
                : how === "renamed"
                  ? Buffer.from(raw.toString("utf8").replace('"seq":7', '"seq":8'))
                  : Buffer.from("{not json")
            yield* db`UPDATE journal SET raw = ${planted} WHERE tenant = ${tenant} AND run_id = ${long} AND seq = 7`
            if (how === "renamed") {
              // The chain holds (hash recomputed over the planted bytes, and the next record's prev_hash with it): only the body check sees it.
              const [prev] = yield* db<{
                prev_hash: Uint8Array
              }>`SELECT prev_hash FROM journal WHERE tenant = ${tenant} AND run_id = ${long} AND seq = 7`
              const hash = Buffer.from(
                Digest.chain(Digest.fromBytes(prev?.prev_hash ?? new Uint8Array()).pipe(Either.getOrThrow), planted),
                "hex",
              )
              yield* db`UPDATE journal SET hash = ${hash} WHERE tenant = ${tenant} AND run_id = ${long} AND seq = 7`
              yield* db`UPDATE journal SET prev_hash = ${hash} WHERE tenant = ${tenant} AND run_id = ${long} AND seq = 8`
            }
            const lines = yield* (
              path === "the undecoded read path"
                ? exportLines.pipe(Effect.provide(JournalArchiveSql.layer))
                : exportLines
            ).pipe(as(tenant))
            const trailer = JSON.parse(lines[lines.length - 1] ?? "") as {
              runs: number
              records: number
              unreadable: ReadonlyArray<{ run: string; seq: number; detail: string }>
            }
            assert.deepStrictEqual(
              {
                runs: trailer.runs,
                records: trailer.records,
                unreadable: trailer.unreadable.map((u) => [u.run, u.seq]),
              },
              { runs: 4, records: 4 + 2 + 6 + 1, unreadable: [[long, 7]] },
            )
            const verified = yield* Verify.lines(Stream.fromIterable(lines))
            assert.strictEqual(verified.unreadable.length, 1)
            const target = Backend.freshTenant()
            const refused = yield* Effect.flip(Restore.restore(() => Stream.fromIterable(lines)).pipe(as(target)))
            assert.strictEqual(refused._tag, "RestoreRefused")
            const journal = yield* JournalStore
            assert.deepStrictEqual(
              yield* journal.runs(Option.none(), 10).pipe(Effect.provideService(Tenant, target)),
              [],
            )
          }),
      )
    })
  })
}
