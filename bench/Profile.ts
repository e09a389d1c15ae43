/**
 * `tsx bench/Profile.ts <pg|sqlite> <concurrency> <runs>`: the peer cell's keyed two-effect run
 * alone, in a process of its own, so `node --cpu-prof` sees only agentplane's side. Prints
 * runs/s, p50 and client CPU per run as the peer cell measures them.
 */
import { Effect } from "effect"
import * as Run from "../src/domain/Run.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import * as Runtime from "../src/runtime/Runtime.js"
import * as Databases from "./Databases.js"
import { measure } from "./Harness.js"
import * as RuntimeBench from "./Runtime.js"

const [dialectArg = "pg", concurrencyArg = "16", runsArg = "4000"] = process.argv.slice(2)
const dialect = dialectArg === "sqlite" ? "sqlite" : "pg"
const concurrency = Number(concurrencyArg)
const runs = Number(runsArg)

const db = await Databases.create()
try {
  const rt = RuntimeBench.runtimeOn(db, dialect, concurrency)
  await rt.runtime()
  const tenant = TenantId.make("bench-profile")
  const call = (n: number) =>
    rt.runPromise(
      Effect.flatMap(Runtime.Runtime, (x) =>
        x.run(RuntimeBench.TwoEffects, Run.labeled({ n }, "bench"), { admissionKey: `profile-${n}` }),
      ).pipe(
        Effect.tap((r) => (r.status._tag === "Succeeded" ? Effect.void : Effect.dieMessage(r.status._tag))),
        Effect.provideService(Tenant, tenant),
      ) as Effect.Effect<unknown, unknown, RuntimeBench.Services>,
    )
  await measure(Math.max(concurrency * 3, 200), concurrency, 0, call)
  const f = await measure(runs, concurrency, 1_000_000, call)
  console.log(
    `${dialect} c${concurrency}: ${f.perSec.toFixed(0)} runs/s, p50 ${f.p50.toFixed(2)} ms, CPU ${f.cpuPerOp.toFixed(0)} µs/run`,
  )
  await rt.dispose()
} finally {
  await db.remove()
}
