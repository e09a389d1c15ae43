/**
 * Export holds one page at a time: 60,000 records export in a process whose old generation is
 * capped at 48 MB, where keeping every row read (a mutation of `Export` that pushed each row to
 * an array) runs out of heap and aborts. Resident memory at a million records, which this cap
 * cannot show, is measured by `bench/Archive.ts`.
 */
import { spawn } from "node:child_process"
import { Effect, Option } from "effect"
import { afterAll, describe, it } from "vitest"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId, Seq, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import * as Cli from "./Cli.js"

afterAll(Cli.cleanUp)

const RECORDS = 60_000
const RUN = 1_000
const OLD_SPACE_MB = 48

/** RECORDS notes in runs of RUN, written verbatim a run at a time (as restore writes). */
const seed = Effect.gen(function* () {
  const journal = yield* JournalStore
  for (let written = 0; written < RECORDS; written += RUN) {
    const run = generateRunId()
    let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
    const batch: Array<Journal.Verbatim> = []
    for (let seq = 1; seq <= RUN; seq++) {
      const raw = Journal.body({
        run,
        seq: Seq.make(seq),
        case: Option.none(),
        step: StepId.make(seq % 7),
        phase: "forward",
        effectKey: Option.none(),
        kind: { kind: "Note", text: `note ${seq} of ${run}: the quick brown fox jumps over the lazy dog` },
      })
      const hash = Digest.chain(head.hash, raw)
      batch.push({ run, seq: Seq.make(seq), prevHash: head.hash, hash, raw, attestation: Option.none() })
      head = { seq, hash }
    }
    const [first, ...rest] = batch
    if (first !== undefined) yield* journal.importRecords([first, ...rest], [])
  }
})

describe("flat memory", () => {
  it(`exports ${RECORDS} records with the old generation capped at ${OLD_SPACE_MB} MB`, async () => {
    const { store, layer, drop } = await Cli.sqlite.make()
    try {
      await Effect.runPromise(seed.pipe(Effect.provideService(Tenant, TenantId.make("many")), Effect.provide(layer)))
      const child = spawn(process.execPath, [
        `--max-old-space-size=${OLD_SPACE_MB}`,
        "--import",
        "tsx",
        "test/archive/ExportMany.ts",
        store,
        "many",
      ])
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString("utf8")
      })
      child.stderr.on("data", (c: Buffer) => {
        stderr += c.toString("utf8")
      })
      const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
      assert.strictEqual(code, 0, stderr.slice(-2_000))
      const trailer = JSON.parse(stdout) as { records: number; runs: number; unreadable: ReadonlyArray<unknown> }
      assert.deepStrictEqual(
        { records: trailer.records, runs: trailer.runs, unreadable: trailer.unreadable },
        { records: RECORDS, runs: RECORDS / RUN, unreadable: [] },
      )
    } finally {
      await drop()
    }
  }, 300_000)
})
