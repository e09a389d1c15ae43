/**
 * `npx tsx bench/Archive.ts [--records N] [--run-length L] [--only sqlite|pg] [--verbs export,verify,restore]`:
 * export, verify and restore (or the verbs named; verify and restore read the export) of a tenant with N journal records (default 1,000,000, in runs of L = 1,000) on
 * each backend, each verb as its own `agentplane` process under `/usr/bin/time`, so the figures
 * are what an operator gets: records per second over the whole process (start-up included) and
 * the process's peak resident memory. The verbs run as built JavaScript (`npm run build`, or
 * `--main <Main.js>`), as deployed: under tsx the compiler alone holds ~270 MB. Seeding goes through `importRecords` in batches, which is
 * how a restore writes too. Not part of `npm test`; works in a throwaway database and file.
 */
import { spawn } from "node:child_process"
import { rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Effect, type Layer, Option } from "effect"
import * as Digest from "../src/domain/Digest.js"
import { generateRunId, Seq, StepId } from "../src/domain/Ids.js"
import * as Journal from "../src/domain/Journal.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import type { Backend } from "../src/errors/StoreError.js"
import * as PgBackend from "../src/layers/PgBackend.js"
import * as SqliteBackend from "../src/layers/SqliteBackend.js"
import { JournalStore } from "../src/services/JournalStore.js"
import type * as Stores from "../src/services/Stores.js"
import * as Databases from "./Databases.js"

const args = process.argv.slice(2)
const flag = (name: string, fallback: number) => {
  const at = args.indexOf(name)
  return at >= 0 ? Number(args[at + 1]) : fallback
}
const RECORDS = flag("--records", 1_000_000)
const RUN_LENGTH = flag("--run-length", 1_000)
const only = args.includes("--only") ? args[args.indexOf("--only") + 1] : undefined
const TENANT = TenantId.make("bench")
const VERBS = new Set(
  (args.includes("--verbs") ? (args[args.indexOf("--verbs") + 1] ?? "") : "export,verify,restore").split(","),
)
const MAIN = args.includes("--main") ? (args[args.indexOf("--main") + 1] ?? "") : "dist/src/cli/Main.js"

/** N records in runs of RUN_LENGTH, each a Note of about 120 bytes of body, imported 1,000 at a time. */
const seed = (layer: Layer.Layer<Stores.Stores, Backend>) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    let left = RECORDS
    while (left > 0) {
      const run = generateRunId()
      const length = Math.min(RUN_LENGTH, left)
      let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
      for (let from = 1; from <= length; from += 1_000) {
        const batch: Array<Journal.Verbatim> = []
        for (let seq = from; seq < Math.min(from + 1_000, length + 1); seq++) {
          const raw = Journal.body({
            run,
            seq: Seq.make(seq),
            case: Option.none(),
            step: StepId.make(seq % 7),
            phase: "forward",
            effectKey: Option.none(),
            kind: { kind: "Note", text: `bench note ${seq} of ${run}: the quick brown fox jumps over the lazy dog` },
          })
          const hash = Digest.chain(head.hash, raw)
          batch.push({ run, seq: Seq.make(seq), prevHash: head.hash, hash, raw, attestation: Option.none() })
          head = { seq, hash }
        }
        const [first, ...rest] = batch
        if (first !== undefined) yield* journal.importRecords([first, ...rest], [])
      }
      left -= length
    }
  }).pipe(Effect.provideService(Tenant, TENANT), Effect.provide(layer))

interface Measured {
  readonly secs: number
  readonly peakMb: number
  readonly code: number | null
  readonly stdout: string
}

/** One `agentplane` verb under /usr/bin/time: wall seconds and peak RSS. */
const verb = (verbArgs: ReadonlyArray<string>): Promise<Measured> =>
  new Promise((resolve) => {
    const child = spawn("/usr/bin/time", ["-f", "H7TIME %e %M", process.execPath, MAIN, ...verbArgs, "--quiet"])
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString()
    })
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString()
    })
    child.once("exit", (code) => {
      const m = /H7TIME ([\d.]+) (\d+)/.exec(stderr)
      if (code !== 0) process.stderr.write(stderr)
      resolve({ secs: Number(m?.[1] ?? Number.NaN), peakMb: Number(m?.[2] ?? Number.NaN) / 1024, code, stdout })
    })
  })

const row = (backend: string, what: string, m: Measured) =>
  `| ${backend} | ${what} | ${RECORDS.toLocaleString("en")} | ${m.secs.toFixed(1)} | ${Math.round(RECORDS / m.secs).toLocaleString("en")} | ${m.peakMb.toFixed(0)} | ${m.code} |`

const main = async () => {
  statSync(MAIN)
  process.stdout.write(`bench: ${RECORDS} records in runs of ${RUN_LENGTH}, verbs from ${MAIN}\n`)
  const db = await Databases.create()
  const file = join(tmpdir(), `${db.pgName}.jsonl`)
  const rows: Array<string> = []
  try {
    const backends = [
      { name: "sqlite", store: db.sqliteFile, layer: SqliteBackend.layer({ filename: db.sqliteFile }) },
      { name: "postgres", store: db.pgUrl, layer: PgBackend.layer({ url: db.pgUrl }) },
    ].filter((b) => only === undefined || b.name === only || (only === "pg" && b.name === "postgres"))
    for (const b of backends) {
      const t = performance.now()
      await Effect.runPromise(seed(b.layer))
      process.stdout.write(`${b.name}: seeded ${RECORDS} records in ${((performance.now() - t) / 1000).toFixed(1)} s\n`)
      const exported = await verb(["export", "--store", b.store, "--tenant", TENANT, "--out", file])
      rows.push(row(b.name, "export", exported))
      process.stdout.write(`${rows.at(-1)}  (${(statSync(file).size / 1e6).toFixed(0)} MB file)\n`)
      if (VERBS.has("verify")) {
        const verified = await verb(["verify", "--in", file])
        rows.push(row(b.name, "verify", verified))
        process.stdout.write(`${rows.at(-1)}\n`)
      }
      if (VERBS.has("restore")) {
        const restored = await verb(["restore", "--store", b.store, "--tenant", "restored", "--in", file])
        rows.push(row(b.name, "restore (verify pass + write pass)", restored))
        process.stdout.write(`${rows.at(-1)}\n`)
      }
    }
    process.stdout.write(
      `\n| backend | verb | records | wall s | records/s | peak RSS MB | exit |\n|---|---|---|---|---|---|---|\n${rows.join("\n")}\n`,
    )
  } finally {
    rmSync(file, { force: true })
    rmSync(`${file}.partial`, { force: true })
    await db.remove()
  }
}

main().catch((e) => {
  process.stderr.write(`${String(e)}\n`)
  process.exitCode = 1
})
