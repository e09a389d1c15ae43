/**
 * The sealing mark (§9.1): the first keyed open of a store leaves a `key_ring` row under the empty
 * tenant (which `Tenant.parse` refuses, so no tenant's scope can ever be it) naming the KEK's
 * fingerprint, and every later open checks it before anything is served. A store opened with no
 * key ring after it was sealed would write new content in the clear beside the sealed, where
 * erasing the case cannot reach it, and read the sealed as ciphertext strings: so no KEK is
 * `SealedWithoutKek`, another KEK is `SealedUnderOtherKek`. Every path that opens a store to
 * write or read payloads goes through `check`: the CLI's verbs (`Keys.ts`) and the embedded
 * default (`SqliteBackend.layerConfig`, what the demo and the agent example open).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { SealedUnderOtherKek, SealedWithoutKek } from "../../errors/ErasureError.js"
import { Backend } from "../../errors/StoreError.js"
import * as Sql from "./Sql.js"

const MARK_TENANT = ""
const MARK_SCOPE = "agentplane.sealing"

const MarkRow = Schema.Array(Schema.Struct({ kek_id: Schema.NullOr(Schema.String) }))

/**
 * Checks the migrated store's mark against `kekId` (the KEK given, if any), leaving the mark when
 * keyed; idempotent, the first KEK stands. `store` names the store in the errors.
 */
export const check = (
  store: string,
  kekId: Option.Option<string>,
): Effect.Effect<void, Backend | SealedWithoutKek | SealedUnderOtherKek, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (Option.isSome(kekId)) {
      yield* sql`
        INSERT INTO key_ring (tenant, scope, kek_id, wrapped, destroyed_at, reason)
        VALUES (${MARK_TENANT}, ${MARK_SCOPE}, ${kekId.value}, NULL, NULL, ${"payloads of this store are sealed (§9.1)"})
        ON CONFLICT (tenant, scope) DO NOTHING`
    }
    const found = yield* sql`SELECT kek_id FROM key_ring WHERE tenant = ${MARK_TENANT} AND scope = ${MARK_SCOPE}`.pipe(
      Effect.flatMap(Schema.decodeUnknown(MarkRow)),
      Effect.map((rows) => Option.fromNullable(rows[0]?.kek_id)),
      Effect.catchTag("ParseError", (e) => Effect.fail(new Backend({ detail: `key_ring mark: ${e.message}` }))),
    )
    if (Option.isNone(found)) return
    if (Option.isNone(kekId)) return yield* new SealedWithoutKek({ store, kekId: found.value })
    if (found.value !== kekId.value) {
      return yield* new SealedUnderOtherKek({ store, stored: found.value, supplied: kekId.value })
    }
  }).pipe(Sql.orBackend)
