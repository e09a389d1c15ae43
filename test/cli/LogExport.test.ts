/**
 * An auditor's round from the command line, a real process on each backend: the deployment's
 * verifier key from its key file (`log verifier`), a checkpoint kept (`log checkpoint`), an
 * export, and `verify --checkpoint --log-verifier` holding the export to both. An export with a
 * logged run taken out fails verify (exit 2, the run named) and restore (exit 2, nothing written).
 * Restored whole into a new store under the same tenant and integrated with the same key, the
 * deployment's next export still holds to the checkpoint the auditor kept before.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { Effect, type Layer, Option } from "effect"
import { afterAll, describe, it } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import * as Merkle from "../../src/domain/Merkle.js"
import * as SignedNote from "../../src/domain/SignedNote.js"
import * as Tenant from "../../src/domain/Tenant.js"
import type { Backend } from "../../src/errors/StoreError.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import type * as Stores from "../../src/services/Stores.js"
import { concluded, written } from "../conformance/journal/Fixtures.js"
import { assert } from "../support/Assert.js"
import { cleanUp, cli, postgres, scratchFile, sqlite } from "../support/Cli.js"

afterAll(cleanUp)

const inTenant = <A, E>(
  layer: Layer.Layer<Stores.Stores, Backend>,
  tenant: string,
  effect: Effect.Effect<A, E, Stores.Stores | Tenant.Tenant>,
) =>
  Effect.runPromise(
    effect.pipe(Effect.provideService(Tenant.Tenant, Tenant.TenantId.make(tenant)), Effect.provide(layer)),
  )

/** Seals `n` runs of two records and a conclusion; their ids. */
const sealRuns = (n: number) =>
  Effect.gen(function* () {
    const store = yield* JournalStore
    const runs: Array<RunId> = []
    for (let i = 0; i < n; i++) {
      const r = yield* written(2)
      yield* store.seal(r.run, r.epoch, "succeeded", [concluded("succeeded")])
      runs.push(r.run)
    }
    return runs
  })

const json = (out: string) => JSON.parse(out) as Record<string, unknown>

for (const backend of [sqlite, postgres]) {
  describe(`agentplane verify against the log (${backend.name})`, () => {
    it("a checkpoint kept before anything was sealed is the empty tree's, and a later export extends it", {
      timeout: 180_000,
    }, async () => {
      const { store, layer, drop } = await backend.make()
      try {
        const tenant = `t-${randomUUID().slice(0, 8)}`
        const keyFile = scratchFile("log.key")
        writeFileSync(keyFile, `${randomBytes(32).toString("base64")}\n`)
        const keyFlags = ["--log-key", keyFile, "--log-name", "auditable.test"]
        const key = (await cli(["log", "verifier", ...keyFlags])).stdout.trim()
        // With the key, a log with nothing sealed has its size-0 checkpoint to keep; signed once.
        const empty = await cli(["log", "checkpoint", "--store", store, "--tenant", tenant, ...keyFlags])
        assert.strictEqual(empty.code, 0, empty.stderr)
        const keptEmpty = json(empty.stdout)
        assert.deepStrictEqual([keptEmpty.size, keptEmpty.root], [0, Merkle.EMPTY_ROOT])
        const again = await cli(["log", "checkpoint", "--store", store, "--tenant", tenant])
        assert.deepStrictEqual(json(again.stdout), keptEmpty, again.stderr)
        const kept = scratchFile("kept-empty.json")
        writeFileSync(kept, empty.stdout)
        // Asked for by its size, another tenant's empty checkpoint is signed the same way.
        const other = `${tenant}-b`
        const bySize = await cli(["log", "checkpoint", "--store", store, "--tenant", other, "--size", "0", ...keyFlags])
        assert.strictEqual(bySize.code, 0, bySize.stderr)
        assert.deepStrictEqual([json(bySize.stdout).size, json(bySize.stdout).root], [0, Merkle.EMPTY_ROOT])

        await inTenant(layer, tenant, sealRuns(3))
        const swept = await cli(["sweep", "--store", store, "--tenant", tenant, ...keyFlags])
        assert.deepStrictEqual(json(swept.stdout).log, { integrated: 3, size: 3 }, swept.stderr)
        const file = scratchFile("export-after-empty.jsonl")
        const exported = await cli(["export", "--store", store, "--tenant", tenant, "--out", file, "--quiet"])
        assert.strictEqual(exported.code, 0, exported.stderr)
        const held = await cli(["verify", "--in", file, "--checkpoint", kept, "--log-verifier", key, "--quiet"])
        assert.strictEqual(held.code, 0, held.stderr + held.stdout)
        const log = json(held.stdout).log as Record<string, unknown>
        assert.deepStrictEqual([log.size, log.kept], [3, { size: 0, root: Merkle.EMPTY_ROOT, added: 3 }])
      } finally {
        await drop()
      }
    })

    it("an export verifies against a kept checkpoint and the verifier key; with a run taken out, verify and restore refuse it", {
      timeout: 180_000,
    }, async () => {
      const { store, layer, drop } = await backend.make()
      try {
        const tenant = `t-${randomUUID().slice(0, 8)}`
        const keyFile = scratchFile("log.key")
        const seed = randomBytes(32)
        writeFileSync(keyFile, `${seed.toString("base64")}\n`)
        const keyFlags = ["--log-key", keyFile, "--log-name", "auditable.test"]
        const runs = await inTenant(layer, tenant, sealRuns(3))
        const swept = await cli(["sweep", "--store", store, "--tenant", tenant, ...keyFlags])
        assert.strictEqual(swept.code, 0, swept.stderr)

        const verifier = await cli(["log", "verifier", ...keyFlags])
        assert.strictEqual(verifier.code, 0, verifier.stderr)
        const key = verifier.stdout.trim()
        assert.strictEqual(key, SignedNote.formatVerifierKey(SignedNote.signer("auditable.test", seed)))
        const kept = scratchFile("kept.json")
        writeFileSync(kept, (await cli(["log", "checkpoint", "--store", store, "--tenant", tenant])).stdout)

        const file = scratchFile("export.jsonl")
        const exported = await cli(["export", "--store", store, "--tenant", tenant, "--out", file, "--quiet"])
        assert.strictEqual(exported.code, 0, exported.stderr)
        const good = await cli(["verify", "--in", file, "--checkpoint", kept, "--log-verifier", key, "--quiet"])
        assert.strictEqual(good.code, 0, good.stderr)
        const log = json(good.stdout).log as Record<string, unknown>
        assert.deepStrictEqual(
          [log.origin, log.size, log.signature, log.unlogged, log.kept],
          [`auditable.test/log/${tenant}`, 3, "verified", 0, { size: 3, root: log.root, added: 0 }],
        )

        // The second run's records taken out, the trailer's counts fixed: only the log can tell.
        const [, cut] = runs
        const lines = readFileSync(file, "utf8").trimEnd().split("\n")
        const left = lines.filter((l) => !(l.includes('"kind":"agentplane.export.record"') && l.includes(`"${cut}"`)))
        const end = JSON.parse(left.pop() as string) as { runs: number; records: number }
        left.push(
          JSON.stringify({ ...end, runs: end.runs - 1, records: end.records - (lines.length - 1 - left.length) }),
        )
        const tampered = scratchFile("tampered.jsonl")
        writeFileSync(tampered, `${left.join("\n")}\n`)
        const bad = await cli(["verify", "--in", tampered, "--checkpoint", kept, "--log-verifier", key, "--quiet"])
        assert.strictEqual(bad.code, 2, bad.stderr)
        assert.deepStrictEqual(json(bad.stdout).findings, [
          {
            finding: "missing",
            run: cut,
            index: 1,
            detail: `run ${cut} is in the log at 1 (line 3) but has no records in the export`,
          },
        ])
        assert.match(bad.stderr, new RegExp(`run ${cut} is in the log`))

        const target = `t-${randomUUID().slice(0, 8)}`
        const restored = await cli(["restore", "--store", store, "--tenant", target, "--in", tampered, "--quiet"])
        assert.strictEqual(restored.code, 2, restored.stderr)
        assert.strictEqual(json(restored.stdout).error, "CheckpointMismatch")
        assert.deepStrictEqual(
          await inTenant(
            layer,
            target,
            Effect.flatMap(JournalStore, (j) => j.runs(Option.none(), 10)),
          ),
          [],
        )

        // Disaster recovery: the whole export into a new store, the same tenant, the same key.
        const recovered = await backend.make()
        try {
          const back = await cli(["restore", "--store", recovered.store, "--tenant", tenant, "--in", file, "--quiet"])
          assert.strictEqual(back.code, 0, back.stderr)
          assert.strictEqual(json(back.stdout).sealed, 3)
          const integrated = await cli(["sweep", "--store", recovered.store, "--tenant", tenant, ...keyFlags])
          assert.deepStrictEqual(json(integrated.stdout).log, { integrated: 3, size: 3 }, integrated.stderr)
          const again = scratchFile("recovered.jsonl")
          const out = ["export", "--store", recovered.store, "--tenant", tenant, "--out", again, "--quiet"]
          assert.strictEqual((await cli(out)).code, 0)
          const held = await cli(["verify", "--in", again, "--checkpoint", kept, "--log-verifier", key, "--quiet"])
          assert.strictEqual(held.code, 0, held.stderr + held.stdout)
          assert.deepStrictEqual((json(held.stdout).log as Record<string, unknown>).kept, log.kept)
          // The same history, the same log: the two exports are the same bytes.
          assert.strictEqual(readFileSync(again, "utf8"), readFileSync(file, "utf8"))
        } finally {
          await recovered.drop()
        }

        // What the auditor brought must be usable: a verifier key that is not one is refused before reading.
        const wrongKey = await cli(["verify", "--in", file, "--log-verifier", "not-a-key", "--quiet"])
        assert.strictEqual(wrongKey.code, 1)
        assert.match(wrongKey.stderr, /--log-verifier/)
      } finally {
        await drop()
      }
    })
  })
}
