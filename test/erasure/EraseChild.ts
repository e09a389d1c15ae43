/**
 * A child process for `EraseKill.test.ts`: runs `eraseCase` on a real store with the key ring the
 * CLI would configure (`Keys.ts`: the KEK from `AGENTPLANE_KEK`, the key ring in `--keys`), and,
 * given a kill point k ≥ 0, SIGKILLs itself once k of the erasure's steps (each blob expiry, each
 * key destroy) have completed, before the next one starts or before `eraseCase` returns. A kill
 * point of -1 lets it finish; it then prints `{"expired": n}`.
 *
 *   node --import tsx test/erasure/EraseChild.ts <store> <keys> <tenant> <case> <at> <reason> <k>
 */
import { Effect, Layer, Option } from "effect"
import * as Keys from "../../src/cli/Keys.js"
import type { CaseId } from "../../src/domain/Ids.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Time from "../../src/domain/Time.js"
import { eraseCase } from "../../src/erasure/EraseCase.js"
import * as BlobStoreSql from "../../src/layers/BlobStoreSql.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { KeyRing } from "../../src/services/KeyRing.js"

const [store = "", keys = "", tenant = "", kase = "", at = "0", reason = "", killAt = "-1"] = process.argv.slice(2)
const k = Number(killAt)
let done = 0

/** SIGKILL, not an exception or an interruption: nothing after it runs, no finalizer, no rollback but the database's own. */
const point = Effect.sync(() => {
  if (done === k) process.kill(process.pid, "SIGKILL")
})
const step = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(
    point,
    Effect.tap(effect, () => {
      done++
    }),
  )

const program = Effect.gen(function* () {
  const blobs = yield* BlobStore
  const ring = yield* KeyRing
  const expired = yield* eraseCase(kase as CaseId, Time.Timestamp.make(Number(at)), reason).pipe(
    Effect.provideService(BlobStore, { ...blobs, expire: (d, when, why) => step(blobs.expire(d, when, why)) }),
    Effect.provideService(KeyRing, { ...ring, destroy: (s, when, why) => step(ring.destroy(s, when, why)) }),
  )
  yield* point
  yield* Effect.sync(() => process.stdout.write(`${JSON.stringify({ expired })}\n`))
})

const world = Effect.gen(function* () {
  const ring = yield* Effect.flatMap(Keys.resolve({ keys: Option.some(keys), kekFile: Option.none() }, store), (r) =>
    Option.match(r, { onNone: () => Effect.dieMessage("AGENTPLANE_KEK is not set"), onSome: Effect.succeed }),
  )
  const client = Keys.client(store)
  return Layer.mergeAll(
    Layer.provide(SqlStores.layer, client),
    Layer.provide(BlobStoreSql.layer, client),
    Keys.keyRing(store, ring),
  )
})

Effect.runPromise(
  Effect.flatMap(world, (layer) =>
    program.pipe(Effect.provideService(Tenant, TenantId.make(tenant)), Effect.provide(layer)),
  ) as Effect.Effect<void>,
).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${String(e)}\n`)
    process.exit(1)
  },
)
