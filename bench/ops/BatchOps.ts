/**
 * BatchStore's per-item path: `reserve` an item for its run, then `record` its outcome. The raw
 * mirror is `BatchStoreSql`'s insert returning the fresh item (no transaction) and its update.
 */
import { Effect } from "effect"
import { Succeeded } from "../../src/domain/Batch.js"
import { BatchId } from "../../src/domain/Ids.js"
import * as Quota from "../../src/domain/Quota.js"
import { BatchStore } from "../../src/services/BatchStore.js"
import { expect, type Op, runId } from "../Op.js"
import { insertRows, pick } from "../Raw.js"

const RESERVE = `INSERT INTO batch_items (tenant, batch_id, item_key, run_id) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant, batch_id, item_key) DO NOTHING RETURNING item_key, run_id, outcome, detail, tokens, minor`
const RECORD = `UPDATE batch_items SET outcome = $1, detail = $2, tokens = $3, minor = $4 WHERE tenant = $5 AND batch_id = $6 AND item_key = $7 RETURNING item_key`

const BATCH = BatchId.make(`batch_${"0".repeat(26)}`)
const SPEND = new Quota.Spend({ tokens: 1200, minorUnits: 3 })
const SUCCEEDED = new Succeeded()

export const reserveRecord: Op = {
  name: "batch reserve + record",
  ops: 3000,
  make: (cell) => {
    const keys = Array.from({ length: cell.count }, (_, i) => `item-${String(i).padStart(8, "0")}`)
    const key = (i: number) => keys[i] ?? `item-${i}`
    return {
      seed: (raw) => insertRows(raw, "batches", ["tenant", "batch_id", "plan_digest"], [[cell.tenant, BATCH, "plan"]]),
      store: (i) =>
        Effect.gen(function* () {
          const store = yield* BatchStore
          yield* store.reserve(BATCH, key(i), runId(i))
          yield* store.record(BATCH, key(i), SUCCEEDED, SPEND)
        }),
      raw: async (raw, i) => {
        const item = await raw.query(pick(raw, RESERVE), [cell.tenant, BATCH, key(i), runId(i)], true)
        expect(item.length === 1, "raw reserve returned no fresh item")
        const written = await raw.query(
          pick(raw, RECORD),
          ["succeeded", null, SPEND.tokens, SPEND.minorUnits, cell.tenant, BATCH, key(i)],
          true,
        )
        expect(written.length === 1, "raw record wrote nothing")
      },
    }
  },
}
