/**
 * CaseStore operations: `correlateOrOpen` with a new key and with a held one, and `putState`.
 * Each raw mirror is the statement sequence `CaseStoreSql` sends, text for text.
 */
import { Effect } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { CaseVersion, generateCaseId } from "../../src/domain/Ids.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { caseId, expect, NOW, type Op } from "../Op.js"
import { insertRows, pick, type Raw } from "../Raw.js"

/** `lookup` for one key: the open case holding it. */
const LOOKUP = `SELECT case_id, namespace, value FROM case_correlation WHERE tenant = $1 AND open AND (namespace = $2 AND value = $3)`
const INSERT_CASE = `INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at) VALUES ($1, $2, $3, 'open', 'null', 0, $4)`
const INSERT_KEYS = `INSERT INTO case_correlation (tenant, case_id, namespace, value) VALUES ($1, $2, $3, $4)`
/**
 * pg: lookup, case and key in one statement (`CaseStoreSql`'s `openAtOnce` for one key). The
 * open-key index settles the race; the key's FK check runs at the statement's end.
 */
const OPEN_AT_ONCE = `WITH held AS (SELECT case_id FROM case_correlation WHERE tenant = $1 AND open AND (namespace = $2 AND value = $3) LIMIT 1), opened AS (INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at) SELECT $1, $4, $5, 'open', 'null', 0, CAST($6 AS BIGINT) WHERE NOT EXISTS (SELECT 1 FROM held) RETURNING case_id), keyed AS (INSERT INTO case_correlation (tenant, case_id, namespace, value) SELECT $1, opened.case_id, k.namespace, k.value FROM opened, (VALUES ($2, $3)) AS k (namespace, value) RETURNING case_id) SELECT (SELECT case_id FROM held) AS held, (SELECT case_id FROM keyed LIMIT 1) AS opened`
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
        // The held key is looked for first, outside any transaction.
        const held = await raw.query(pick(raw, LOOKUP), [cell.tenant, k.namespace, k.value], true)
        expect(held.length === 0, "raw lookup found a case for a new key")
        const id = generateCaseId()
        if (raw.dialect === "pg") {
          const [row] = await raw.query(OPEN_AT_ONCE, [cell.tenant, k.namespace, k.value, id, "claim", NOW], true)
          expect(row?.opened === id, "raw open opened no case")
          return
        }
        // sqlite: no writes inside WITH; the same work under the write lock.
        await raw.tx(async (q) => {
          const again = await q(pick(raw, LOOKUP), [cell.tenant, k.namespace, k.value])
          expect(again.length === 0, "raw lookup found a case for a new key")
          await q(pick(raw, INSERT_CASE), [cell.tenant, id, "claim", NOW])
          await q(pick(raw, INSERT_KEYS), [cell.tenant, id, k.namespace, k.value])
        })
      },
    }
  },
}

export const correlateExisting: Op = {
  name: "correlateOrOpen (existing key)",
  // One statement of a few µs on SQLite: 4,000 operations (a 25 ms raw cell) timed the store's
  // path before the JIT had compiled it (47 µs/op on a first cell, 11 µs on the next); the 2 s
  // cap still bounds the slow backends.
  ops: 20_000,
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
        const held = await raw.query(pick(raw, LOOKUP), [cell.tenant, k.namespace, k.value], true)
        expect(held.length === 1, "raw lookup missed the held key")
      },
    }
  },
}

export const putState: Op = {
  name: "putState",
  // As the held key: one short statement, timed warm.
  ops: 20_000,
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
        const rows = await raw.query(
          pick(raw, PUT_STATE),
          [JSON.stringify({ step: i, ok: true }), v + 1, cell.tenant, caseId(w), v],
          true,
        )
        expect(rows.length === 1, "raw putState wrote nothing")
      },
    }
  },
}

// internal

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
