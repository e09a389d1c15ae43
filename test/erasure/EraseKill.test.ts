/**
 * Erasure interrupted by a process kill (§9.1, issue 18): a child process (`EraseChild.ts`) runs
 * `eraseCase` and SIGKILLs itself at each point of the erasure in turn (before the first blob
 * expiry, after each blob expiry, after each key destroy), then a fresh process runs the erasure
 * again; the end state (tombstones with their first `at` and reason, the case's and run's key
 * scopes destroyed, no bytes left) is the one an uninterrupted erasure leaves, on SQLite and on
 * PostgreSQL, with the key ring in a SQLite file of its own as `--keys` configures it.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { Effect, Layer, Option } from "effect"
import { afterAll, describe, it } from "vitest"
import * as Keys from "../../src/cli/Keys.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Kek from "../../src/erasure/Kek.js"
import * as BlobStoreSql from "../../src/layers/BlobStoreSql.js"
import * as SqlStores from "../../src/layers/SqlStores.js"
import { BlobStore } from "../../src/services/BlobStore.js"
import { KeyRing } from "../../src/services/KeyRing.js"
import { assert } from "../support/Assert.js"
import { cleanUp, postgres, scratchFile, sqlite, startScript } from "../support/Cli.js"
import { type Seeded, seed } from "./World.js"

afterAll(cleanUp)

/** Two blob expiries, then the case's and the run's key destroys. */
const STEPS = 4
const AT = 1_800_000_777
const REASON = "customer request"

for (const backend of [sqlite, postgres]) {
  describe(`eraseCase killed by SIGKILL (${backend.name})`, () => {
    it("a kill at each point, then a re-run in a fresh process, ends as an uninterrupted erasure does", {
      timeout: 600_000,
    }, async () => {
      const { store, drop } = await backend.make()
      try {
        const keys = scratchFile("erase-keys.db")
        const kekText = randomBytes(32).toString("base64")
        const ring: Keys.Ring = { kek: Kek.make(Buffer.from(kekText, "base64")), keys: Option.some(keys) }
        const tenant = TenantId.make(`kill-${randomUUID().slice(0, 8)}`)
        const client = Keys.client(store)
        const world = Layer.mergeAll(
          Layer.provide(SqlStores.layer, client),
          Layer.provide(BlobStoreSql.layer, client),
          Keys.keyRing(store, ring),
        )
        const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof world> | Tenant>) =>
          Effect.runPromise(
            effect.pipe(Effect.provideService(Tenant, tenant), Effect.provide(world)) as Effect.Effect<A>,
          )
        const erase = (s: Seeded, killAt: number) =>
          startScript("test/erasure/EraseChild.ts", [store, keys, tenant, s.kase, String(AT), REASON, String(killAt)], {
            AGENTPLANE_KEK: kekText,
          }).done
        const finalState = (s: Seeded) =>
          run(
            Effect.gen(function* () {
              const blobs = yield* BlobStore
              const keyRing = yield* KeyRing
              const tombs = yield* Effect.forEach(s.blobs, (d) => blobs.tombstone(d))
              const scopes = yield* Effect.forEach([s.kase as string, s.run as string], (scope) =>
                Effect.map(Effect.either(keyRing.open(scope)), (e) =>
                  e._tag === "Right"
                    ? "live"
                    : e.left._tag === "Destroyed"
                      ? `destroyed at ${e.left.at} (${e.left.reason})`
                      : e.left._tag,
                ),
              )
              const present = yield* Effect.forEach(s.blobs, (d) => blobs.has(d))
              return { tombs, scopes, present }
            }),
          )

        const reference = await run(seed(`ref-${randomUUID()}`, 2))
        const whole = await erase(reference, -1)
        assert.deepStrictEqual([whole.code, whole.stdout.trim()], [0, '{"expired":2}'], whole.stderr)
        const expected = await finalState(reference)
        assert.deepStrictEqual(expected.scopes, [`destroyed at ${AT} (${REASON})`, `destroyed at ${AT} (${REASON})`])
        assert.deepStrictEqual(expected.present, [false, false])

        for (let k = 0; k <= STEPS; k++) {
          const s = await run(seed(`kill-${k}-${randomUUID()}`, 2))
          const killed = await erase(s, k)
          assert.strictEqual(killed.signal, "SIGKILL", `kill after ${k} steps: ${killed.stderr}`)
          assert.strictEqual(killed.stdout, "", `kill after ${k} steps printed nothing`)
          const mid = await finalState(s)
          // What the kill left: exactly the first k steps, the key last.
          assert.deepStrictEqual(mid.present, [k < 1, k < 2], `blobs after a kill after ${k} steps`)
          assert.deepStrictEqual(
            mid.scopes.map((scope) => scope !== "live"),
            [k >= 3, k >= 4],
            `keys after a kill after ${k} steps`,
          )
          const again = await erase(s, -1)
          assert.strictEqual(again.code, 0, again.stderr)
          assert.deepStrictEqual(JSON.parse(again.stdout), { expired: Math.max(0, 2 - k) }, `re-run after ${k} steps`)
          assert.deepStrictEqual(await finalState(s), expected, `state after a kill after ${k} steps and a re-run`)
        }
      } finally {
        await drop()
      }
    })
  })
}
