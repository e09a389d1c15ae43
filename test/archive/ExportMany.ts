/**
 * `node [--max-old-space-size=…] --import tsx test/archive/ExportMany.ts <sqlite file> <tenant>`:
 * exports the tenant through the library's stream and its undecoded read path, dropping each
 * line, and prints the trailer. The flat-memory test runs it under a small old generation, where
 * an export that kept its records would run out of heap.
 */
import { Chunk, Effect, Layer, Stream } from "effect"
import * as Export from "../../src/archive/Export.js"
import * as ArchiveStore from "../../src/cli/ArchiveStore.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"

const [file = "", tenant = ""] = process.argv.slice(2)
let last = ""
const program = Stream.runForEachChunk(Export.lines(), (chunk) =>
  Effect.sync(() => {
    const end = Chunk.last(chunk)
    if (end._tag === "Some") last = end.value
  }),
).pipe(Effect.provideService(Tenant, TenantId.make(tenant)), Effect.provide(Layer.orDie(ArchiveStore.layer(file))))

Effect.runPromise(program).then(
  () => process.stdout.write(`${last}\n`),
  (e) => {
    process.stderr.write(`${String(e)}\n`)
    process.exitCode = 1
  },
)
