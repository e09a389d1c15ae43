/**
 * A process killed mid-integration on SQLite (SIGKILL, nothing flushed or rolled back by the
 * process itself) loses no leaf and repeats none.
 *
 * The parent seals a backlog through the stores, then, round after round, seals some more and
 * starts two child processes (test/faults/LogStoreKillChild.ts, node itself, so the signal
 * reaches the process that holds the file) that integrate the backlog side by side in small
 * batches with the same deployment key, racing for each batch, and SIGKILLs each after a random
 * number of its integrations plus a random delay, so a kill lands anywhere in an integration
 * (its reads, its signing, inside the write transaction, inside COMMIT) while the other process
 * may be integrating too. A child that fails by itself fails the test: a lost race must answer
 * "nothing taken in", not an error. After each kill the parent opens the file afresh and checks what
 * any reader would see: the size only grew; the latest checkpoint's root is the reference root
 * over the first `size` leaves in seal order, and every run proves its inclusion at its position
 * (`LogChecks.assertExactlyOnce`); every checkpoint ever signed is consistent with it; and the
 * rows agree with that size: `log_tree` holds it, `log_node` holds exactly the complete subtrees
 * of a tree of that size (2·size − popcount(size), none past it), no checkpoint is past it. At
 * the end the parent integrates the rest and the root covers every sealed run.
 *
 * A kill before COMMIT leaves the transaction in the WAL uncommitted, so SQLite drops it when the
 * file is next opened; what this test proves of the code is that everything an integration
 * writes is in that one transaction (test/faults/LogStoreSqlite.test.ts cuts each write by itself).
 */
import { randomBytes, randomUUID } from "node:crypto"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { inject } from "vitest"
import * as Merkle from "../../src/domain/Merkle.js"
import { Tenant } from "../../src/domain/Tenant.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import { NOW, type Sealed, sealed } from "../conformance/log/Fixtures.js"
import { assert } from "../support/Assert.js"
import { freshTenant } from "../support/Backend.js"
import * as Cli from "../support/Cli.js"
import { assertExactlyOnce, keyOf, leafHash, nodesOfSize } from "./LogChecks.js"

/** Runs sealed before the first round, and more before each round, so every child has work. */
const BACKLOG = 2_000
const PER_ROUND = 100
const ROUNDS = 8
/** Leaves per integration in the child: many small transactions, many places for a kill to land. */
const BATCH = 7
/** The kill comes after up to this many of the child's integrations, then up to this many milliseconds. */
const MAX_INTEGRATIONS = 40
const MAX_DELAY_MS = 20

const filename = () => join(inject("scratchDir"), `log-kill-${randomUUID()}.db`)

/** The stores and the raw client on `file`, opened afresh each time the layer is built. */
const opened = (file: string) =>
  Layer.mergeAll(SqlStores.layer, Migrations.layer).pipe(
    Layer.provideMerge(SqliteBackend.layerClient({ filename: file })),
  )

/** Seals `n` runs, numbered from `from` (the way of sealing cycles with the number). */
const sealMore = (from: number, n: number) =>
  Effect.flatMap(JournalStore, (store) =>
    Effect.forEach(
      Array.from({ length: n }, (_, i) => from + i),
      (i) => sealed(store, i),
    ),
  )

/** What the rows say, read raw: the tree's size, its subtrees (and any past that size), the checkpoints' sizes. */
const rows = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tenant = yield* Tenant
  const [tree] = yield* sql<{ size: number }>`SELECT size FROM log_tree WHERE tenant = ${tenant}`
  const size = tree?.size ?? 0
  const [nodes] = yield* sql<{ n: number; beyond: number }>`
    SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN (idx + 1) << level > ${size} THEN 1 ELSE 0 END), 0) AS beyond
      FROM log_node WHERE tenant = ${tenant}`
  const checkpoints = yield* sql<{
    size: number
  }>`SELECT size FROM log_checkpoint WHERE tenant = ${tenant} ORDER BY size`
  return { size, nodes: nodes?.n ?? 0, beyond: nodes?.beyond ?? 0, checkpoints: checkpoints.map((c) => c.size) }
}).pipe(Effect.orDie)

/** The whole check after a kill (see the header); returns the size. */
const audit = (runs: ReadonlyArray<Sealed>, where: string) =>
  Effect.gen(function* () {
    const seen = yield* rows
    const latest = yield* assertExactlyOnce(runs, seen.checkpoints)
    const size = Option.match(latest, { onNone: () => 0, onSome: (cp) => cp.size })
    assert.strictEqual(seen.size, size, `${where}: log_tree's size is not the latest checkpoint's`)
    assert.strictEqual(seen.nodes, nodesOfSize(size), `${where}: subtrees stored for a tree of ${size}`)
    assert.strictEqual(seen.beyond, 0, `${where}: subtrees past the size ${size}`)
    assert.isTrue(
      seen.checkpoints.every((s) => s <= size),
      `${where}: a checkpoint past the size ${size}`,
    )
    assert.strictEqual(seen.checkpoints.at(-1) ?? 0, size, `${where}: no checkpoint at the size ${size}`)
    return size
  })

interface Round {
  /** The child said `ready` and had not said `done` when it was killed: the kill fell inside the backlog. */
  readonly midway: boolean
  readonly size: number
}

/** Starts a child integrating on `file`. */
const startChild = (file: string, tenant: string, seed: Uint8Array) =>
  Cli.startScript("test/faults/LogStoreKillChild.ts", [], {
    LOGKILL_FILE: file,
    LOGKILL_TENANT: tenant,
    LOGKILL_SEED: Buffer.from(seed).toString("hex"),
    LOGKILL_BATCH: String(BATCH),
  })

/** SIGKILLs `child` after `integrations` of its integrations and `delay` ms; whether the kill fell inside the backlog. */
const killAfter = (child: ReturnType<typeof startChild>, integrations: number, delay: number) =>
  Effect.gen(function* () {
    const lines = () => child.stdout().split("\n")
    const reached = () => {
      const said = lines()
      return said.includes("done") || (said.includes("ready") && said.length - 2 >= integrations)
    }
    yield* Effect.async<void>((resume) => {
      const look = () => {
        if (reached()) resume(Effect.void)
      }
      child.child.stdout.on("data", look)
      void child.done.then(() => resume(Effect.void))
      look()
      return Effect.sync(() => child.child.stdout.off("data", look))
    })
    yield* Effect.sleep(delay)
    const doneBefore = lines().includes("done")
    child.child.kill("SIGKILL")
    const finished = yield* Effect.promise(() => child.done)
    if (finished.signal !== "SIGKILL" && finished.code !== 0)
      assert.fail(`the child failed by itself (${finished.code}): ${finished.stderr}`)
    return finished.signal === "SIGKILL" && lines().includes("ready") && !doneBefore
  })

describe("faults: LogStore killed on SQLite", () => {
  layer(Layer.empty, { excludeTestServices: true })((it) => {
    it.effect(
      "a process killed anywhere in integration, round after round, loses no leaf and repeats none",
      () => {
        const file = filename()
        const tenant = freshTenant()
        const seed = randomBytes(32)
        const key = keyOf(seed)
        const onFile = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          effect.pipe(Effect.provideService(Tenant, tenant), Effect.provide(opened(file)))
        return Effect.gen(function* () {
          const runs: Array<Sealed> = [...(yield* onFile(sealMore(0, BACKLOG)))]
          const rounds: Array<Round> = []
          let size = 0
          for (let r = 0; r < ROUNDS; r++) {
            runs.push(...(yield* onFile(sealMore(runs.length, PER_ROUND))))
            // Two processes at once, each killed at its own random point: a kill lands beside a live integration.
            const kills = [0, 1].map(() => ({
              child: startChild(file, tenant, seed),
              integrations: Math.floor(Math.random() * MAX_INTEGRATIONS),
              delay: Math.floor(Math.random() * MAX_DELAY_MS),
            }))
            const landed = yield* Effect.forEach(kills, (k) => killAfter(k.child, k.integrations, k.delay), {
              concurrency: "unbounded",
            })
            const midway = landed.some((m) => m)
            const where = `round ${r} (killed after ${kills.map((k) => `${k.integrations} integrations and ${k.delay} ms`).join(", ")})`
            const now = yield* onFile(audit(runs, where))
            assert.isTrue(now >= size, `${where}: the log shrank from ${size} to ${now}`)
            size = now
            rounds.push({ midway, size })
          }
          // The test is only as good as its kills: some must have fallen while the child still had work.
          assert.isTrue(
            rounds.some((r) => r.midway),
            `no kill fell inside the backlog: ${JSON.stringify(rounds)}`,
          )
          yield* onFile(
            Effect.gen(function* () {
              const log = yield* LogStore
              while ((yield* log.integrate(key, NOW, 500)).leaves > 0) {}
              const all = yield* audit(runs, "after the last round")
              assert.strictEqual(all, runs.length)
              const cp = Option.getOrThrow(yield* log.checkpoint())
              assert.strictEqual(cp.root, Merkle.root(runs.map(leafHash)))
            }),
          )
        })
      },
      { timeout: 300_000 },
    )
  })
})
