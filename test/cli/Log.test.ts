/**
 * The transparency log from the command line (§6.5), a real process on each backend:
 * `agentplane sweep --log-key` integrates what the tenant sealed and signs a checkpoint, and
 * `agentplane log checkpoint|inclusion|consistency` print what an auditor checks offline, here
 * with the verifier key and the RFC 9162 checks of `MerkleProof`.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { writeFileSync } from "node:fs"
import { Effect, Either, type Layer } from "effect"
import { afterAll, describe, it } from "vitest"
import * as Checkpoint from "../../src/domain/Checkpoint.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateRunId, type RunId } from "../../src/domain/Ids.js"
import * as MerkleProof from "../../src/domain/MerkleProof.js"
import * as SignedNote from "../../src/domain/SignedNote.js"
import * as Tenant from "../../src/domain/Tenant.js"
import type { Backend } from "../../src/errors/StoreError.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, postgres, scratchFile, sqlite } from "../support/Cli.js"

afterAll(cleanUp)

/** Seals `n` new runs of `tenant`, each after one record; their ids in seal order. */
const sealRuns = (layer: Layer.Layer<Stores.Stores, Backend>, tenant: Tenant.TenantId, n: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* JournalStore
      const runs: Array<RunId> = []
      for (let i = 0; i < n; i++) {
        const run = generateRunId()
        const lease = yield* store.acquire(run, "cli-test", 60)
        yield* store.seal(run, lease.epoch, "swept")
        runs.push(run)
      }
      return runs
    }).pipe(Effect.provideService(Tenant.Tenant, tenant), Effect.provide(layer)),
  )

const json = (out: string) => JSON.parse(out) as Record<string, unknown>
const digests = (value: unknown) => (value as Array<string>).map((d) => Digest.Digest.make(d))

for (const backend of [sqlite, postgres]) {
  describe(`agentplane log (${backend.name})`, () => {
    it("sweep --log-key integrates and signs; log prints a checkpoint, inclusion and consistency that verify offline", {
      timeout: 180_000,
    }, async () => {
      const { store, layer, drop } = await backend.make()
      try {
        const tenant = `t-${randomUUID().slice(0, 8)}`
        const seed = randomBytes(32)
        const keyFile = scratchFile("log.key")
        writeFileSync(keyFile, `${seed.toString("base64")}\n`)
        const verifier = SignedNote.signer("auditable.test", seed)
        const keyFlags = ["--log-key", keyFile, "--log-name", "auditable.test"]
        const runs = await sealRuns(layer, Tenant.TenantId.make(tenant), 3)

        // Before any integration there is nothing to print.
        const none = await cli(["log", "checkpoint", "--store", store, "--tenant", tenant])
        assert.notStrictEqual(none.code, 0)
        assert.match(none.stderr, /no checkpoint yet/)

        const first = await cli(["sweep", "--store", store, "--tenant", tenant, ...keyFlags])
        assert.strictEqual(first.code, 0, first.stderr)
        assert.deepStrictEqual(json(first.stdout).log, { integrated: 3, size: 3 })
        const [more] = await sealRuns(layer, Tenant.TenantId.make(tenant), 2)
        const second = await cli(["sweep", "--store", store, "--tenant", tenant, ...keyFlags])
        assert.deepStrictEqual(json(second.stdout).log, { integrated: 2, size: 5 }, second.stderr)

        const latest = json((await cli(["log", "checkpoint", "--store", store, "--tenant", tenant])).stdout)
        const opened = Either.getOrThrow(Checkpoint.open(latest.note as string, [verifier]))
        assert.deepStrictEqual(
          [opened.origin, opened.size, opened.root],
          [`auditable.test/log/${tenant}`, 5, latest.root],
        )
        const older = json(
          (await cli(["log", "checkpoint", "--store", store, "--tenant", tenant, "--size", "3"])).stdout,
        )
        assert.strictEqual(older.size, 3)

        const inclusion = json(
          (await cli(["log", "inclusion", "--store", store, "--tenant", tenant, "--run", more ?? ""])).stdout,
        )
        assert.deepStrictEqual([inclusion.run, inclusion.index, inclusion.size], [more, 3, 5])
        const leaf = Buffer.from(inclusion.leaf as string, "base64")
        assert.isTrue(
          Either.isRight(
            MerkleProof.verifyInclusion(
              3,
              5,
              Digest.Digest.make(inclusion.leafHash as string),
              digests(inclusion.proof),
              opened.root,
            ),
          ),
        )
        assert.match(leaf.toString("utf8"), new RegExp(`"run":"${more}"`))

        const consistency = json(
          (await cli(["log", "consistency", "--store", store, "--tenant", tenant, "--from", "3"])).stdout,
        )
        assert.deepStrictEqual([consistency.from, consistency.to], [3, 5])
        assert.isTrue(
          Either.isRight(
            MerkleProof.verifyConsistency(
              3,
              5,
              digests(consistency.proof),
              Digest.Digest.make(older.root as string),
              opened.root,
            ),
          ),
        )

        // verify(run): the chain recomputed, and its leaf proved in the latest checkpoint.
        const verified = await cli(["log", "verify", "--store", store, "--tenant", tenant, "--run", runs[0] ?? ""])
        assert.strictEqual(verified.code, 0, verified.stderr)
        assert.deepStrictEqual([json(verified.stdout).verified, json(verified.stdout).size], [true, 5])

        // A run of another tenant is not in this log, and a request missing its flag is refused.
        const stranger = await cli(["log", "inclusion", "--store", store, "--tenant", tenant, "--run", generateRunId()])
        assert.notStrictEqual(stranger.code, 0)
        assert.match(stranger.stderr, /not sealed in this tenant/)
        const bare = await cli(["log", "inclusion", "--store", store, "--tenant", tenant])
        assert.notStrictEqual(bare.code, 0)
        assert.match(bare.stderr, /needs --run/)
        assert.strictEqual(runs.length, 3)
      } finally {
        await drop()
      }
    })
  })
}
