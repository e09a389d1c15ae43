/**
 * The embedded default as a program opens it (`SqliteBackend.layerConfig`, what `npm run demo` and
 * the agent example use) honours a store's sealing mark: with the KEK file `serve` writes beside
 * the store it seals and opens payloads; without that KEK, or under another, it is refused before
 * anything is read or written, so a store `serve` sealed never gets clear payloads beside the
 * sealed.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { renameSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option } from "effect"
import { inject } from "vitest"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Tenant from "../../src/domain/Tenant.js"
import * as Time from "../../src/domain/Time.js"
import * as Kek from "../../src/erasure/Kek.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { assert } from "../support/Assert.js"
import { rawText } from "../support/RawRows.js"

/** `body` on `layerConfig` with `AGENTPLANE_STORE` = `store` and no other variable. */
const withStore = <A, E>(store: string, body: Effect.Effect<A, E, CaseStore | Tenant.Tenant>) =>
  body.pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    Effect.provide(SqliteBackend.layerConfig),
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["AGENTPLANE_STORE", store]]))),
  )

describe("SqliteBackend.layerConfig on a sealed store", () => {
  it.effect("seals and opens with the KEK file beside the store, and refuses without it or under another", () =>
    Effect.gen(function* () {
      const store = join(inject("scratchDir"), `embedded-${randomUUID()}.db`)
      yield* Kek.create(Kek.besideStore(store))
      const secret = `iban ${randomUUID()}`
      const kase = yield* withStore(
        store,
        Effect.gen(function* () {
          const cases = yield* CaseStore
          const at = Time.fromMillis(Date.now())
          const opened = yield* cases.correlateOrOpen("claim", [CorrelationKey.make("claim", randomUUID())], at)
          const found = yield* cases.case(opened.case)
          yield* cases.putState(opened.case, Option.getOrThrow(found).version, { secret })
          return opened.case
        }),
      )
      const raw = yield* Effect.promise(() => rawText(store, ["cases"]))
      assert.isFalse(raw.includes(secret), "sealed at rest")

      const read = yield* withStore(
        store,
        Effect.flatMap(CaseStore, (cases) => cases.case(kase)),
      )
      assert.deepStrictEqual(Option.getOrThrow(read).state, { secret })

      renameSync(Kek.besideStore(store), `${store}.moved`)
      const without = yield* Effect.flip(
        withStore(
          store,
          Effect.flatMap(CaseStore, (cases) => cases.case(kase)),
        ),
      )
      assert.strictEqual(without._tag, "SealedWithoutKek")

      writeFileSync(Kek.besideStore(store), randomBytes(32).toString("base64"))
      const other = yield* Effect.flip(
        withStore(
          store,
          Effect.flatMap(CaseStore, (cases) => cases.case(kase)),
        ),
      )
      assert.strictEqual(other._tag, "SealedUnderOtherKek")
    }),
  )
})
