/**
 * `agentplane restore` (§8.3, §9.3): rebuilds the tenant from an export file (read twice: once
 * to verify all of it before anything is written, once to write). Re-running it after an
 * interruption finishes the restore (see `archive/Restore`). Prints what it wrote as JSON. Exit
 * codes: 0 restored; 2 the export is damaged, or does not match its log checkpoint, and nothing
 * was written; 3 refused (the tenant holds history this export lacks, or the export lists
 * unreadable runs); 1 any other failure.
 */

import { existsSync } from "node:fs"
import { Command, Options } from "@effect/cli"
import { Config, Console, Effect, Schema } from "effect"
import * as Heap from "../archive/Heap.js"
import * as Progress from "../archive/Progress.js"
import * as Restore from "../archive/Restore.js"
import * as Verify from "../archive/Verify.js"
import * as Tenant from "../domain/Tenant.js"
import { exitWith, quiet, readLines, tenant, tenantId } from "./Export.js"
import * as Report from "./Report.js"
import * as StoreFlag from "./StoreFlag.js"

const input = Options.file("in", { exists: "yes" }).pipe(
  Options.withDescription("the export file (env AGENTPLANE_IN; required: restore reads it twice)"),
  Options.withFallbackConfig(Config.string("AGENTPLANE_IN")),
)

const batch = Options.integer("batch").pipe(
  Options.withSchema(Schema.Int.pipe(Schema.between(1, 10_000, { message: () => "--batch is 1 … 10000 records" }))),
  Options.withDescription("records per transaction (env AGENTPLANE_RESTORE_BATCH; default 500)"),
  Options.withFallbackConfig(Config.integer("AGENTPLANE_RESTORE_BATCH")),
  Options.withDefault(500),
)

export const command = Command.make(
  "restore",
  { store: StoreFlag.option, tenant, input, batch, quiet, timeouts: StoreFlag.timeoutOptions },
  ({ store, tenant, input, batch, quiet, timeouts }) =>
    Effect.gen(function* () {
      const id = yield* tenantId(tenant)
      const lines = yield* readLines(input)
      // Opening a SQLite path creates the file: into a file that is not there yet, the export is
      // checked first, with no store open, so a refusal for damage leaves no empty store behind
      // to be mistaken for a restored one (deleting it afterwards would race another process
      // that opened the same new file meanwhile).
      if (!StoreFlag.isPostgres(store) && !existsSync(store)) {
        const damaged = yield* Verify.lines(lines, () => Effect.void).pipe(
          Effect.as(undefined),
          Effect.catchTags({
            ExportDamaged: (e) => Effect.succeed(e),
            CheckpointMismatch: (e) => Effect.succeed(e),
          }),
        )
        if (damaged !== undefined) {
          yield* Console.error(Report.line(damaged))
          yield* Console.log(JSON.stringify({ restored: false, error: damaged._tag, detail: damaged.message }))
          return yield* exitWith(2)
        }
      }
      const progress = yield* Progress.onStderr("restore", quiet)
      const collect = Heap.collector()
      let heard = 0
      const onProgress = (records: number, cases: number) => {
        // Running totals of both passes' second half; the collector counts what is new since the last call.
        collect(Math.max(0, records + cases - heard))
        heard = records + cases
        return progress.update(records, cases)
      }
      const outcome = yield* Restore.restore(() => lines, { batch, onProgress }).pipe(
        Effect.provideService(Tenant.Tenant, id),
        Effect.provide(StoreFlag.layer(store, timeouts)),
        Effect.map((restored) => ({ code: 0, report: { restored: true, ...restored } })),
        Effect.catchTags({
          ExportDamaged: (e) => Effect.succeed({ code: 2, error: e }),
          CheckpointMismatch: (e) => Effect.succeed({ code: 2, error: e }),
          RestoreRefused: (e) => Effect.succeed({ code: 3, error: e }),
          ImportRefused: (e) => Effect.succeed({ code: 3, error: e }),
          RecordRefused: (e) => Effect.succeed({ code: 3, error: e }),
        }),
      )
      yield* progress.finish
      if ("error" in outcome) {
        yield* Console.error(Report.line(outcome.error))
        yield* Console.log(
          JSON.stringify({ restored: false, error: outcome.error._tag, detail: outcome.error.message }),
        )
        yield* exitWith(outcome.code)
      } else yield* Console.log(JSON.stringify(outcome.report))
    }),
).pipe(
  Command.withDescription(
    "rebuild the tenant from an export (§9.3); re-run to finish an interrupted restore; exit 0 restored, 2 damaged (nothing written), 3 refused, 1 failed",
  ),
)
