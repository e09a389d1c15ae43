/**
 * The process test/faults/LogStoreKill.test.ts kills: it opens the SQLite file `LOGKILL_FILE`,
 * says `ready`, and integrates the tenant `LOGKILL_TENANT`'s backlog with the deployment key of
 * the seed `LOGKILL_SEED` (hex) in batches of `LOGKILL_BATCH`, printing each integration's size,
 * until nothing waits (a batch another process took first is no reason to stop); then it says
 * `done` and exits.
 */
import { Effect, Option } from "effect"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { LogStore } from "../../src/services/LogStore.js"
import { NOW } from "../conformance/log/Fixtures.js"
import { keyOf } from "./LogChecks.js"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}

const filename = required("LOGKILL_FILE")
const tenant = TenantId.make(required("LOGKILL_TENANT"))
const key = keyOf(Buffer.from(required("LOGKILL_SEED"), "hex"))
const batch = Number(required("LOGKILL_BATCH"))

const program = Effect.gen(function* () {
  const log = yield* LogStore
  process.stdout.write("ready\n")
  for (;;) {
    const done = yield* log.integrate(key, NOW, batch)
    if (done.leaves > 0) process.stdout.write(`${done.size}\n`)
    // Nothing taken in: the backlog is done, unless another process moved the size first.
    else if (
      (yield* log.checkpoint()).pipe(
        Option.map((cp) => cp.size),
        Option.getOrElse(() => 0),
      ) === done.size
    )
      break
  }
  process.stdout.write("done\n")
}).pipe(Effect.provideService(Tenant, tenant), Effect.provide(SqliteBackend.layer({ filename })))

Effect.runPromise(program).catch((e: unknown) => {
  process.stderr.write(`${String(e)}\n`)
  process.exit(1)
})
