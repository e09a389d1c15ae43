/**
 * CaseStore operations: `correlateOrOpen` with a new key and with a held one, and `putState`.
 * Each raw mirror is the statement sequence `CaseStoreSql` sends, text for text.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { CaseId, CaseVersion, generateCaseId } from "../../src/domain/Ids.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { caseId, expect, NOW, type Op } from "../Op.js"
import { insertRows, pick, type Raw } from "../Raw.js"

/** `lookup` for one key: the open case holding it. */
const LOOKUP = `SELECT case_id, namespace, value FROM case_correlation WHERE tenant = $1 AND open AND (namespace = $2 AND value = $3)`
const INSERT_CASE = `INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at) VALUES ($1, $2, $3, 'open', 'null', 0, $4)`
const INSERT_KEYS = `INSERT INTO case_correlation ("tenant","case_id","namespace","value") VALUES ($1,$2,$3,$4)`
/**
 * Prototype: lookup, case and key in one statement. The open-key index still settles the race
 * (the loser's statement fails whole, as the loser's transaction does now); the key's FK check
 * runs at the statement's end, when the case row it names is there.
 */
const OPEN_CTE = `WITH held AS (SELECT case_id FROM case_correlation WHERE tenant = $1 AND open AND namespace = $2 AND value = $3 LIMIT 1), opened AS (INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at) SELECT $1, $4, $5, 'open', 'null', 0, $6::bigint WHERE NOT EXISTS (SELECT 1 FROM held) RETURNING case_id), keyed AS (INSERT INTO case_correlation (tenant, case_id, namespace, value) SELECT $1, case_id, $2, $3 FROM opened RETURNING case_id) SELECT (SELECT case_id FROM held) AS held, (SELECT case_id FROM keyed) AS opened`
const PUT_STATE = `UPDATE cases SET state = $1, version = $2 WHERE tenant = $3 AND case_id = $4 AND version = $5 RETURNING version`

export const correlateNew: Op = {
  name: "correlateOrOpen (new key)",
  ops: 3000,
  make: (cell) => {
    const keys = Array.from({ length: cell.count }, (_, i) => CorrelationKey.make("claim", `new-${i}`))
    return {
      seed: async () => {},
      store: (i) =>
        Effect.flatMap(CaseStore, (s) => s.correlateOrOpen("claim", [key(keys, i)], NOW)).pipe(
          Effect.map((c) => expect(c._tag === "Opened", "correlateOrOpen opened no case")),
        ),
      raw: async (raw, i) => {
        const k = key(keys, i)
        await raw.tx(async (q) => {
          const held = await q(pick(raw, LOOKUP), [cell.tenant, k.namespace, k.value])
          expect(held.length === 0, "raw lookup found a case for a new key")
          const id = generateCaseId()
          await q(pick(raw, INSERT_CASE), [cell.tenant, id, "claim", NOW])
          await q(pick(raw, INSERT_KEYS), [cell.tenant, id, k.namespace, k.value])
        })
      },
      prototypes: [
        {
          name: "one CTE",
          run: async (raw, i) => {
            const k = key(keys, i)
            const [row] = await raw.query(OPEN_CTE, [cell.tenant, k.namespace, k.value, generateCaseId(), "claim", NOW])
            expect(row?.opened !== null && row?.opened !== undefined, "CTE opened no case")
          },
          store: (i) =>
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              const tenant = yield* Tenant
              const k = key(keys, i)
              const rows = yield* sql
                .unsafe(OPEN_CTE, [tenant, k.namespace, k.value, generateCaseId(), "claim", NOW])
                .pipe(Effect.flatMap(Schema.decodeUnknown(Schema.Array(OpenedRow))))
              expect(rows[0]?.opened !== null, "CTE via SqlClient opened no case")
            }),
        },
      ],
    }
  },
}

export const correlateExisting: Op = {
  name: "correlateOrOpen (existing key)",
  ops: 4000,
  make: (cell) => {
    const keys = Array.from({ length: cell.count }, (_, i) => CorrelationKey.make("claim", `old-${i}`))
    return {
      seed: (raw) => seedCases(raw, cell.tenant, cell.count, (i) => `old-${i}`),
      store: (i) =>
        Effect.flatMap(CaseStore, (s) => s.correlateOrOpen("claim", [key(keys, i)], NOW)).pipe(
          Effect.map((c) => expect(c._tag === "Attached", "correlateOrOpen did not attach")),
        ),
      raw: async (raw, i) => {
        const k = key(keys, i)
        await raw.tx(async (q) => {
          const held = await q(pick(raw, LOOKUP), [cell.tenant, k.namespace, k.value])
          expect(held.length === 1, "raw lookup missed the held key")
        })
      },
      prototypes: [
        {
          // A held key needs no transaction: attach on a plain read, open (in one) only on a miss.
          name: "lookup before BEGIN",
          run: async (raw, i) => {
            const k = key(keys, i)
            const held = await raw.query(LOOKUP, [cell.tenant, k.namespace, k.value])
            expect(held.length === 1, "lookup missed the held key")
          },
          store: (i) =>
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              const tenant = yield* Tenant
              const k = key(keys, i)
              const rows = yield* sql`
                SELECT case_id, namespace, value FROM case_correlation
                 WHERE tenant = ${tenant} AND open AND ${sql.or([sql`(namespace = ${k.namespace} AND value = ${k.value})`])}`.pipe(
                Effect.flatMap(Schema.decodeUnknown(Schema.Array(HolderRow))),
              )
              expect(rows.length === 1, "lookup via SqlClient missed the held key")
            }),
        },
      ],
    }
  },
}

export const putState: Op = {
  name: "putState",
  ops: 4000,
  make: (cell) => {
    // One case per worker, so workers never conflict; each worker tracks its case's version.
    const versions = Array.from({ length: cell.workers }, () => 0)
    const next = (w: number) => {
      const v = versions[w] ?? 0
      versions[w] = v + 1
      return v
    }
    return {
      seed: (raw) => seedCases(raw, cell.tenant, cell.workers, (i) => `put-${i}`),
      store: (i, w) =>
        Effect.flatMap(CaseStore, (s) => s.putState(caseId(w), CaseVersion.make(next(w)), { step: i, ok: true })).pipe(
          Effect.asVoid,
        ),
      raw: async (raw, i, w) => {
        const v = next(w)
        const rows = await raw.query(pick(raw, PUT_STATE), [
          JSON.stringify({ step: i, ok: true }),
          v + 1,
          cell.tenant,
          caseId(w),
          v,
        ])
        expect(rows.length === 1, "raw putState wrote nothing")
      },
    }
  },
}

// internal

const HolderRow = Schema.Struct({ case_id: CaseId, namespace: Schema.String, value: Schema.String })
const OpenedRow = Schema.Struct({ held: Schema.NullOr(CaseId), opened: Schema.NullOr(CaseId) })

const key = (keys: ReadonlyArray<CorrelationKey.CorrelationKey>, i: number) => {
  const k = keys[i]
  if (k === undefined) throw new Error(`no key for operation ${i}`)
  return k
}

/** `n` open cases `caseId(0…n−1)`, each holding the key `claim=<value(i)>`. */
const seedCases = async (raw: Raw, tenant: string, n: number, value: (i: number) => string) => {
  const ids = Array.from({ length: n }, (_, i) => i)
  await insertRows(
    raw,
    "cases",
    ["tenant", "case_id", "kind", "status", "state", "version", "opened_at"],
    ids.map((i) => [tenant, caseId(i), "claim", "open", "null", 0, NOW]),
  )
  await insertRows(
    raw,
    "case_correlation",
    ["tenant", "case_id", "namespace", "value"],
    ids.map((i) => [tenant, caseId(i), "claim", value(i)]),
  )
}
