/**
 * The property (§6.5): random sequences of seals through two store instances and
 * integration batches, some integrations raced by both instances at once. Every checkpoint is
 * consistent with every earlier one, every sealed run has an inclusion proof in every checkpoint
 * larger than its position, and each leaf is integrated exactly once: the leaves the calls report
 * add up to the seals. On pg instance B is a client of its own (two pools on one database); on
 * memory and SQLite the same assertions hold of one shared store.
 */
import { describe } from "@effect/vitest"
import { Context, Effect, FastCheck, Layer, Option } from "effect"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore, type StoredCheckpoint } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, type Backend } from "../../support/Backend.js"
import { runs } from "../../support/Races.js"
import type { Tester } from "../journal/Fixtures.js"
import { assertConsistent, assertIncluded, deploymentKey, NOW, type Sealed, sealed } from "./Fixtures.js"

const Step = FastCheck.oneof(
  FastCheck.record({ op: FastCheck.constant("seal" as const), by: FastCheck.integer({ min: 0, max: 1 }) }),
  FastCheck.record({
    op: FastCheck.constant("integrate" as const),
    by: FastCheck.integer({ min: 0, max: 1 }),
    max: FastCheck.integer({ min: 1, max: 4 }),
  }),
  FastCheck.record({ op: FastCheck.constant("race" as const), max: FastCheck.integer({ min: 1, max: 4 }) }),
)

export const instances = (test: Tester, backend: Backend) => {
  describe("two instances", () => {
    test.prop(
      "seals and integrations across two instances: checkpoints consistent, every run included, every leaf once",
      [FastCheck.array(Step, { minLength: 1, maxLength: 24 })],
      ([steps]) =>
        Effect.scoped(
          Effect.gen(function* () {
            const second = yield* Layer.build(backend.pooled(2))
            const stores = [
              { journal: yield* JournalStore, log: yield* LogStore },
              { journal: Context.get(second, JournalStore), log: Context.get(second, LogStore) },
            ] as const
            const { key } = deploymentKey()
            const sealedRuns: Array<Sealed> = []
            const checkpoints = new Map<number, StoredCheckpoint>()
            let integrated = 0
            const note = Effect.flatMap(LogStore, (log) => log.checkpoint()).pipe(
              Effect.map(Option.map((cp) => checkpoints.set(cp.size, cp))),
            )
            const by = (i: number) => (i === 0 ? stores[0] : stores[1])
            for (const step of steps) {
              if (step.op === "seal") sealedRuns.push(yield* sealed(by(step.by).journal, sealedRuns.length))
              else if (step.op === "integrate") {
                integrated += (yield* by(step.by).log.integrate(key, NOW, step.max)).leaves
                yield* note
              } else {
                const both = yield* Effect.all(
                  stores.map((s) => s.log.integrate(key, NOW, step.max)),
                  { concurrency: "unbounded" },
                )
                integrated += both.reduce((n, r) => n + r.leaves, 0)
                yield* note
              }
            }
            // Then everything that is left, in batches of 3.
            for (;;) {
              const r = yield* stores[0].log.integrate(key, NOW, 3)
              if (r.leaves === 0) break
              integrated += r.leaves
              yield* note
            }
            assert.strictEqual(integrated, sealedRuns.length)
            const all = [...checkpoints.values()].sort((x, y) => x.size - y.size)
            assert.strictEqual(all[all.length - 1]?.size ?? 0, sealedRuns.length)
            for (const [i, older] of all.entries())
              for (const newer of all.slice(i)) yield* assertConsistent(older, newer)
            for (const cp of all)
              for (const [position, s] of sealedRuns.entries())
                if (position < cp.size) yield* assertIncluded(s, position, cp)
          }),
        ).pipe(asFreshTenant),
      { timeout: 120_000, fastCheck: { ...runs.fastCheck } },
    )
  })
}
