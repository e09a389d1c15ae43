/**
 * One of the two processes racing `CaseStore.correlateOrOpen` on one SQLite file. Started as
 * `node --import tsx CorrelateChild.ts '<json CorrelateArgs>'`; it opens the store, warms the
 * verb up under a tenant of its own, prints `ready`, then reads `<value> <at>` lines on stdin: for
 * each it spins until the wall clock reaches `at` (epoch ms, the same instant for both processes:
 * the start barrier), calls `correlateOrOpen` for the key `<namespace>:<value>` and prints
 * `<value> <Opened|Attached> <case>`, or `<value> error <detail>`. It exits when stdin closes.
 */
import { createInterface } from "node:readline"
import { Effect, ManagedRuntime } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { CaseStore } from "../../src/services/CaseStore.js"

/** What the parent hands each child on its command line. */
export interface CorrelateArgs {
  readonly filename: string
  readonly tenant: string
  /** Names the child's own warm-up tenant. */
  readonly name: string
  /** The namespace of every key raced. */
  readonly namespace: string
}

const CASE_KIND = "correlate-race"
/** Calls each child makes before `ready`, so the race is run by compiled code in both. */
const WARM_UPS = 200

const args = JSON.parse(process.argv[2] ?? "") as CorrelateArgs
const runtime = ManagedRuntime.make(SqliteBackend.layer({ filename: args.filename }))

const correlate = (tenant: string, value: string) =>
  Effect.flatMap(CaseStore, (cases) =>
    cases.correlateOrOpen(CASE_KIND, [CorrelationKey.make(args.namespace, value)], Timestamp.make(1_700_000_000)),
  ).pipe(Effect.provideService(Tenant, TenantId.make(tenant)))

const main = async () => {
  const warm = `${args.tenant}-warm-${args.name}`
  for (let i = 0; i < WARM_UPS; i++) {
    await runtime.runPromise(correlate(warm, `w${i % 20}`))
  }
  process.stdout.write("ready\n")
  const lines = createInterface({ input: process.stdin })
  for await (const line of lines) {
    const [value, at] = line.split(" ")
    if (value === undefined || at === undefined) continue
    const start = Number(at)
    // The barrier: both processes leave this loop at the same millisecond tick.
    while (Date.now() < start) {}
    const exit = await runtime.runPromiseExit(correlate(args.tenant, value))
    if (exit._tag === "Success") process.stdout.write(`${value} ${exit.value._tag} ${exit.value.case}\n`)
    else process.stdout.write(`${value} error ${String(exit.cause).replaceAll("\n", " ")}\n`)
  }
  await runtime.dispose()
}

main().catch((e: unknown) => {
  process.stderr.write(`correlate child failed: ${String(e)}\n`)
  process.exitCode = 2
})
