/**
 * `agentplane drill` as an operator runs it, a real process (`node --import tsx`), over a SQLite
 * store with its `blobs` table and a key ring in a file of its own: an erased case is erased by
 * design and exits 0; a blob deleted with no tombstone is a finding and exits 2; a key ring that
 * never held the case's key makes its sealed state a finding; `--help` names flags and variables.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { describe, inject, it } from "vitest"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import { eraseCase } from "../../src/erasure/EraseCase.js"
import * as Kek from "../../src/erasure/Kek.js"
import * as BlobStoreSql from "../../src/layers/BlobStoreSql.js"
import { digestParam } from "../../src/layers/internal/Columns.js"
import * as Migrations from "../../src/layers/Migrations.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { assert } from "../support/Assert.js"
import { cli, lines } from "../support/Cli.js"
import { at, keyRing, seed } from "./World.js"

describe("agentplane drill", () => {
  it("tells erasure from loss, and exits 2 on a finding", async () => {
    const dir = inject("scratchDir")
    const store = join(dir, `drill-${randomUUID()}.db`)
    const keys = join(dir, `drill-keys-${randomUUID()}.db`)
    const kekFile = join(dir, `kek-${randomUUID()}`)
    const kekText = randomBytes(32).toString("base64")
    writeFileSync(kekFile, `${kekText}\n`)
    const kek = Kek.make(Buffer.from(kekText, "base64"))
    const tenant = TenantId.make(`drill-${randomUUID().slice(0, 8)}`)
    const client = Layer.provideMerge(Layer.fresh(Migrations.layer), SqliteBackend.layerClient({ filename: store }))
    const world = Layer.mergeAll(
      Layer.provide(SqlStores.layer, client),
      Layer.provide(BlobStoreSql.layer, client),
      client,
      keyRing(kek, keys),
    )
    const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof world> | Tenant>) =>
      Effect.runPromise(effect.pipe(Effect.provideService(Tenant, tenant), Effect.provide(world)) as Effect.Effect<A>)

    const { erased, kept } = await run(
      Effect.gen(function* () {
        const erased = yield* seed("to be forgotten", 2)
        const kept = yield* seed("to be kept")
        yield* eraseCase(erased.kase, at(50), "customer request")
        return { erased, kept }
      }),
    )
    const base = ["drill", "--store", store, "--tenant", tenant, "--blobs", "store", "--keys", keys]

    const clean = await cli([...base, "--kek-file", kekFile])
    assert.strictEqual(clean.code, 0, clean.stderr)
    const out = lines(clean.stdout)
    const summary = out.find((l) => l.kind === "agentplane.drill.summary")
    // Kept: one blob, the state, the key. Erased: two tombstones, the state, the key.
    assert.deepStrictEqual(summary, { kind: "agentplane.drill.summary", cases: 2, present: 3, erased: 4, findings: 0 })
    const artifacts = out.filter((l) => l.kind === "agentplane.drill.artifact")
    assert.isTrue(artifacts.every((a) => a.case === erased.kase && a.verdict === "erased"))
    assert.deepStrictEqual(
      artifacts.map((a) => a.artifact).sort(),
      [...erased.blobs.map((d) => `blob:${d}`), "key", "state"].sort(),
    )

    // A blob lost behind the store's back: no tombstone explains it.
    const lost = kept.blobs[0] ?? ""
    await run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`DELETE FROM blobs WHERE tenant = ${tenant} AND digest = ${digestParam(lost as never)}`,
      ),
    )
    const found = await cli([...base], { AGENTPLANE_KEK: kekText })
    assert.strictEqual(found.code, 2, found.stderr)
    const finding = lines(found.stdout).filter((l) => l.verdict === "finding")
    assert.deepStrictEqual(
      finding.map((f) => [f.case, f.artifact]),
      [[kept.kase, `blob:${lost}`]],
    )
    assert.match(String(finding[0]?.detail), /neither bytes nor a tombstone/)

    // Another key ring never held the kept case's key: its sealed state is a finding too.
    const stranger = await cli([
      ...base.slice(0, -1),
      join(dir, `other-keys-${randomUUID()}.db`),
      "--kek-file",
      kekFile,
    ])
    assert.strictEqual(stranger.code, 2, stranger.stderr)
    assert.isTrue(
      lines(stranger.stdout).some((l) => l.case === kept.kase && l.artifact === "state" && l.verdict === "finding"),
    )

    // --keys without a KEK says what to give.
    const noKek = await cli(base)
    assert.notStrictEqual(noKek.code, 0)
    assert.match(noKek.stderr + noKek.stdout, /AGENTPLANE_KEK or --kek-file/)
    // Five spawned processes, each paying tsx's start-up on a loaded machine.
  }, 240_000)

  it("--help names each flag and its variable", async () => {
    const help = await cli(["drill", "--help"])
    assert.strictEqual(help.code, 0, help.stderr)
    for (const text of [
      "--store",
      "--tenant",
      "--blobs",
      "--keys",
      "--kek-file",
      "AGENTPLANE_BLOBS",
      "AGENTPLANE_KEYS",
      "AGENTPLANE_KEK_FILE",
      "AGENTPLANE_KEK",
    ]) {
      assert.match(help.stdout, new RegExp(text))
    }
  }, 120_000)
})
