/**
 * `agentplane forget-admissions` as a real process: the window is required; a key admitted now
 * is kept by a one-day window and freed by a zero-day one, and the count is printed.
 */
import { Effect } from "effect"
import { afterAll, describe, it } from "vitest"
import * as Tenant from "../../src/domain/Tenant.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Cli from "../archive/Cli.js"
import * as Fx from "../conformance/journal/Fixtures.js"
import { assert } from "../support/Assert.js"

afterAll(Cli.cleanUp)

describe("forget-admissions", () => {
  it("needs --older-than-days, keeps a key younger than the window and frees one inside it", {
    timeout: 180_000,
  }, async () => {
    const { store, layer } = await Cli.sqlite.make()
    const admittedAs = Effect.flatMap(JournalStore, (j) => j.admittedAs("idem-1")).pipe(
      as(Tenant.DEFAULT),
      Effect.provide(layer),
    )
    await Effect.runPromise(
      Effect.gen(function* () {
        const journal = yield* JournalStore
        const { run, epoch } = yield* Fx.leased()
        yield* journal.append(run, epoch, [Fx.admitted("idem-1")])
      }).pipe(as(Tenant.DEFAULT), Effect.provide(layer)),
    )
    const [missing, negative] = await Promise.all([
      Cli.cli(["forget-admissions", "--store", store]),
      Cli.cli(["forget-admissions", "--store", store, "--older-than-days", "-1"]),
    ])
    assert.strictEqual(missing.code, 1, missing.stderr)
    assert.isTrue(missing.stderr.includes("--older-than-days"), missing.stderr)
    assert.strictEqual(negative.code, 1, negative.stderr)
    const kept = await Cli.cli(["forget-admissions", "--store", store, "--older-than-days", "1"])
    const report = JSON.parse(kept.stdout) as { kind: string; freed: number }
    assert.deepStrictEqual([kept.code, report.kind, report.freed], [0, "agentplane.admissions.forgotten", 0])
    assert.strictEqual((await Effect.runPromise(admittedAs))._tag, "Some")
    const freed = await Cli.cli(["forget-admissions", "--older-than-days", "0"], { AGENTPLANE_STORE: store })
    assert.deepStrictEqual(
      {
        code: freed.code,
        freed: (JSON.parse(freed.stdout) as { freed: number }).freed,
        lines: freed.stdout.split("\n").length,
      },
      { code: 0, freed: 1, lines: 2 },
    )
    assert.strictEqual((await Effect.runPromise(admittedAs))._tag, "None")
  })
})

const as =
  (tenant: Tenant.TenantId) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.provideService(effect, Tenant.Tenant, tenant)
