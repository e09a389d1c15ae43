/**
 * The replay gate over a large export, for `ReplayMemory.test.ts`: one run of `orders.place`
 * recorded on the memory backend, cloned into `runs` runs (each record's body names its new run,
 * and its chain is hashed again), streamed a line at a time into `ReplayGate.check`. Every
 * `SAMPLE` verdicts the live heap is read after a full collection (`--expose-gc`). Prints the
 * summary, the records and bytes streamed, and the live heap in MB after the first `SAMPLE`
 * verdicts and at its largest.
 */
import { Chunk, Effect, Option, Stream } from "effect"
import * as Export from "../../src/archive/Export.js"
import * as Format from "../../src/archive/Format.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId, type RunId } from "../../src/domain/Ids.js"
import type * as Journal from "../../src/domain/Journal.js"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as ReplayGate from "../../src/runtime/ReplayGate.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import { orders } from "../cli/replay/Orders.js"

const runs = Number(process.argv[2] ?? "1000")
const SAMPLE = 1_000
const tenant = TenantId.make("t-replay-many")
const def = orders(false)

/** The one recorded run's record lines, parsed back into what an export line carries. */
const recorded = Effect.gen(function* () {
  yield* Effect.flatMap(Runtime.Runtime, (rt) => rt.run(def, Run.labeled({ n: 1 }, "test")))
  const lines = Chunk.toReadonlyArray(yield* Stream.runCollect(Export.lines()))
  return lines.flatMap((l) => {
    const parsed = Format.parse(l)
    return parsed._tag === "Right" && parsed.right._tag === "Record" ? [parsed.right.record] : []
  })
}).pipe(Effect.provide(TestRuntime.layer([def])), Effect.provideService(Tenant, tenant))

function* exportOf(template: ReadonlyArray<Journal.Verbatim>, stats: { bytes: number }) {
  const emit = (line: string) => {
    stats.bytes += line.length + 1
    return line
  }
  yield emit(Format.headerLine(tenant))
  const from = template[0]?.run as string
  for (let i = 0; i < runs; i++) {
    const run: RunId = generateRunId()
    let prev = Digest.ZERO
    for (const r of template) {
      const raw = Buffer.from(Buffer.from(r.raw).toString("utf8").replaceAll(from, run))
      const hash = Digest.chain(prev, raw)
      yield emit(Format.recordLine({ run, seq: r.seq, prevHash: prev, hash, raw, attestation: Option.none() }))
      prev = hash
    }
  }
  yield emit(Format.endLine({ runs, records: runs * template.length, cases: 0, unreadable: [] }))
}

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with --expose-gc")
let maxLive = 0
let firstLive = 0
let verdicts = 0
const sample = () => {
  gc()
  const live = process.memoryUsage().heapUsed
  if (firstLive === 0) firstLive = live
  maxLive = Math.max(maxLive, live)
}

const main = Effect.gen(function* () {
  const template = yield* recorded
  const stats = { bytes: 0 }
  const summary = yield* ReplayGate.check(Stream.fromIterable(exportOf(template, stats)), {
    onVerdict: () =>
      Effect.sync(() => {
        verdicts += 1
        if (verdicts % SAMPLE === 0) sample()
      }),
  }).pipe(Effect.provide(TestRuntime.replayLayer([def])))
  sample()
  return {
    summary,
    records: runs * template.length,
    bytes: stats.bytes,
    firstLiveMb: firstLive / (1 << 20),
    maxLiveMb: maxLive / (1 << 20),
  }
})

Effect.runPromise(main).then(
  (out) => process.stdout.write(`${JSON.stringify(out)}\n`),
  (e) => {
    process.stderr.write(`${String(e)}\n`)
    process.exit(1)
  },
)
