/**
 * The journal's verbatim import (§9.3): records written as exported, each continuing its run's
 * stored chain, with the indexes `append` keeps, then the seals named, each at its head.
 */
import { Effect, Either, Option } from "effect"
import type { RunId } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { Tenant } from "../../domain/Tenant.js"
import { RecordRefused } from "../../errors/StoreError.js"
import type { JournalStore } from "../../services/JournalStore.js"
import { digestParam } from "../internal/Columns.js"
import * as Sql from "../internal/Sql.js"
import { IMPORT_CHUNK } from "./Build.js"
import type { Statements } from "./Statements.js"

export const make = (s: Statements): Pick<JournalStore["Type"], "importRecords"> => {
  const { sql, dialect, now, notWritten, sealOf, headOf, sealRow, indexOutcome } = s

  /**
   * A verbatim import (§9.3) inside the caller's transaction. Nothing is locked: the runs are new
   * to this tenant, and a concurrent import or append of the same run meets the primary key, which
   * refuses the whole batch. Rows go in multi-row inserts, since a restore writes millions.
   */
  const importWithin = (
    tenant: string,
    records: ReadonlyArray<Journal.Verbatim>,
    seals: ReadonlyArray<Journal.ImportSeal>,
  ) =>
    Effect.gen(function* () {
      const heads = new Map<RunId, Journal.Head>()
      const stamped = new Map<RunId, string | null>()
      const rows: Array<globalThis.Record<string, unknown>> = []
      const admissions: Array<{ readonly key: string; readonly record: Journal.Verbatim }> = []
      const concluded: Array<{ readonly run: RunId; readonly outcome: Journal.RunOutcome }> = []
      for (const record of records) {
        const refuse = (detail: string) => new RecordRefused({ run: record.run, seq: record.seq, detail })
        let head = heads.get(record.run)
        if (head === undefined) {
          const [sealed] = yield* sealOf(tenant, record.run)
          if (sealed !== undefined) return yield* refuse(`the run is sealed (${sealed.outcome})`)
          head = yield* headOf(tenant, record.run)
        }
        const checked = Journal.checkVerbatim(record, head)
        if (Either.isLeft(checked)) return yield* refuse(checked.left)
        const body = checked.right
        const attestation = Option.getOrNull(record.attestation)
        rows.push({
          tenant,
          run_id: record.run,
          seq: record.seq,
          // The writer's epoch is not exported; 1 is the first any lease could have had.
          epoch: 1,
          kind: body.kind.kind,
          effect_key: Option.getOrNull(body.effectKey),
          case_id: Option.getOrNull(body.case),
          prev_hash: digestParam(record.prevHash),
          hash: digestParam(record.hash),
          raw: Buffer.from(record.raw),
          key_id: attestation?.keyId ?? null,
          signature: attestation?.signature ?? null,
        })
        heads.set(record.run, { seq: record.seq, hash: record.hash })
        if (Option.isSome(body.case) || !stamped.has(record.run)) stamped.set(record.run, Option.getOrNull(body.case))
        if (body.kind.kind === "RunAdmitted" && body.kind.idempotency_key !== undefined)
          admissions.push({ key: body.kind.idempotency_key, record })
        if (body.kind.kind === "RunSealed") concluded.push({ run: record.run, outcome: body.kind.outcome })
      }
      for (let i = 0; i < rows.length; i += IMPORT_CHUNK) {
        const chunk = rows.slice(i, i + IMPORT_CHUNK)
        const first = records[i]
        const written = yield* sql`INSERT INTO journal ${sql.insert(chunk)} RETURNING seq`.pipe(
          // The primary key and `journal_effect_started` refuse a record already stored or a repeated start.
          Sql.catchSql(Sql.isUniqueViolation, () =>
            Effect.fail(
              new RecordRefused({
                run: first?.run ?? "",
                seq: first?.seq ?? 0,
                detail: "a record of this batch is already stored, or repeats an effect start",
              }),
            ),
          ),
        )
        if (written.length !== chunk.length) return yield* notWritten(`records from ${first?.run}/${first?.seq}`)
      }
      for (const { key, record } of admissions) {
        const claimed = yield* sql`
          INSERT INTO run_admission (tenant, key, run_id, admitted_at) VALUES (${tenant}, ${key}, ${record.run}, ${now})
          ON CONFLICT (tenant, key) DO NOTHING
          RETURNING run_id`
        if (claimed.length === 0)
          return yield* new RecordRefused({
            run: record.run,
            seq: record.seq,
            detail: `admission key ${JSON.stringify(key)} is held by another run`,
          })
      }
      // In import order: a restore concludes runs in run id order, so that is the order runsByOutcome shows.
      for (const { run, outcome } of concluded) {
        if ((yield* indexOutcome(tenant, run, outcome)) === 0) return yield* notWritten(`outcome of ${run}`)
      }
      for (const [run, kase] of stamped) {
        const touched = yield* sql`
          INSERT INTO run_activity (tenant, run_id, case_id, updated_at)
          VALUES (${tenant}, ${run}, ${kase}, ${now})
          ON CONFLICT (tenant, run_id) DO UPDATE
             SET updated_at = EXCLUDED.updated_at, case_id = COALESCE(EXCLUDED.case_id, run_activity.case_id)
          RETURNING run_id`
        if (touched.length === 0) return yield* notWritten(`activity of ${run}`)
      }
      const sealing = new Set<RunId>()
      for (const seal of seals) {
        if (sealing.has(seal.run))
          return yield* new RecordRefused({ run: seal.run, seq: 0, detail: "a seal must name a run once" })
        sealing.add(seal.run)
        // A run this call writes seals at the head it wrote; another at its stored head (none: a bare seal at ZERO).
        let head = heads.get(seal.run)
        if (head === undefined) {
          const [sealed] = yield* sealOf(tenant, seal.run)
          if (sealed !== undefined)
            return yield* new RecordRefused({ run: seal.run, seq: 0, detail: `the run is sealed (${sealed.outcome})` })
          head = yield* headOf(tenant, seal.run)
        }
        const sealed = yield* sealRow(tenant, seal.run, seal.outcome, head.hash)
        if (sealed === 0) return yield* notWritten(`seal of ${seal.run}`)
        // A seal without a conclusion record in this call (the sweeper's bare evidence runs, a run
        // written by an earlier call) indexes its outcome as `seal` does live: runsByOutcome then
        // follows the order of the seals.
        if (!concluded.some((c) => c.run === seal.run)) {
          if ((yield* indexOutcome(tenant, seal.run, seal.outcome)) === 0)
            return yield* notWritten(`outcome of ${seal.run}`)
        }
      }
      return records.length
    })

  return {
    importRecords: (records, seals) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return yield* dialect.write(importWithin(tenant, records, seals))
      }).pipe(Sql.orBackend),
  }
}
