/**
 * One SQLite cell of the keyed two-effect run, in a process of its own, for `bench/Baseline.ts`.
 * The same file runs in this checkout and, copied, in a worktree of an older commit: it uses only
 * what both have (the bench's `runtimeOn` and `TwoEffects`, which `Baseline` exports in the
 * worktree, the runtime's `run` with an admission key, `Run.labeled`, `Tenant`) and prints one
 * line of JSON, the cell's `Figures`.
 *
 * Arguments: `<sqlite file> <concurrency> <runs> <cap seconds>`. The file is created and migrated
 * by the runtime's own layers; the caller removes it.
 */
import { Effect } from "effect"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import { measure } from "../Harness.js"
import { runtimeOn, TwoEffects } from "../Runtime.js"

const [file, concurrencyArg, runsArg, capArg] = process.argv.slice(2)
if (file === undefined || concurrencyArg === undefined || runsArg === undefined || capArg === undefined) {
  throw new Error("usage: Cell.ts <sqlite file> <concurrency> <runs> <cap seconds>")
}
const concurrency = Number(concurrencyArg)
const runs = Number(runsArg)
const cap = Number(capArg)

// Only the file is used on SQLite; the PostgreSQL fields are never read.
const rt = runtimeOn({ pgUrl: "", pgName: "", sqliteFile: file, remove: async () => {} }, "sqlite", concurrency)
const tenant = TenantId.make("bench-baseline")
const call = (n: number) =>
  rt.runPromise(
    Effect.flatMap(Runtime.Runtime, (x) =>
      x.run(TwoEffects, Run.labeled({ n }, "bench"), { admissionKey: `b${n}` }),
    ).pipe(
      Effect.tap((r) =>
        r.status._tag === "Succeeded" ? Effect.void : Effect.dieMessage(`bench run ended ${r.status._tag}`),
      ),
      Effect.provideService(Tenant, tenant),
    ) as Effect.Effect<unknown, unknown, never>,
  )
try {
  await rt.runtime()
  await measure(Math.max(concurrency * 3, 20), concurrency, 0, call)
  const figures = await measure(runs, concurrency, 1_000_000, call, cap)
  process.stdout.write(`${JSON.stringify(figures)}\n`)
} finally {
  await rt.dispose()
}
