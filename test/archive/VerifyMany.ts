/**
 * `node --max-old-space-size=N --expose-gc --import tsx test/archive/VerifyMany.ts <export> [leaves in memory]`:
 * verifies the export file as `agentplane verify` reads it (a file stream split into lines) and
 * prints what it found with the largest heap that survived a full collection, sampled every
 * `SAMPLE` lines. The bounded-memory test runs it under a small old generation.
 */

import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Effect, Option, Stream } from "effect"
import * as Verify from "../../src/archive/Verify.js"

const SAMPLE = 20_000

const [file = "", inMemory] = process.argv.slice(2)
const gc = (globalThis as { gc?: () => void }).gc
let peak = 0
let lines = 0
let since = 0
const sample = () => {
  gc?.()
  peak = Math.max(peak, process.memoryUsage().heapUsed)
}

const program = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const source = fs.stream(file).pipe(
    Stream.decodeText(),
    Stream.splitLines,
    // Every line counts toward a sample, leaves included (`onLines` hears only records and cases).
    Stream.mapChunks((chunk) => {
      lines += chunk.length
      since += chunk.length
      if (since >= SAMPLE) {
        since = 0
        sample()
      }
      return chunk
    }),
  )
  return yield* Verify.lines(source, undefined, {}, inMemory === undefined ? {} : { leavesInMemory: Number(inMemory) })
}).pipe(Effect.provide(NodeFileSystem.layer))

Effect.runPromise(program).then(
  (v) => {
    sample()
    const log = Option.getOrThrow(v.log)
    process.stdout.write(
      `${JSON.stringify({ lines, runs: v.runs, records: v.records, size: log.size, unlogged: log.unlogged, peak })}\n`,
    )
  },
  (e) => {
    process.stderr.write(`${String(e)}\n`)
    process.exitCode = 1
  },
)
