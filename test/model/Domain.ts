/**
 * The small domain every model sequence draws from: few keys, runs, effects and instants, so
 * that calls collide on the same rows far more often than real traffic would.
 */
import { randomBytes } from "node:crypto"
import { FastCheck as fc } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Digest from "../../src/domain/Digest.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { type CaseId, generateCaseId, generateRunId, type RunId } from "../../src/domain/Ids.js"
import type { Json } from "../../src/domain/Json.js"
import * as Time from "../../src/domain/Time.js"

/** Instants 1000, 1015, … 1180: four steps make the 60 s timer lease, so windows and leases interact. */
export const at = fc.integer({ min: 0, max: 12 }).map((n) => Time.Timestamp.make(1_000 + n * 15))

/** Limits 0–4: zero is a case of its own, and four is often fewer than the rows. */
export const limit = fc.integer({ min: 0, max: 4 })

/**
 * Four keys over two namespaces. "～" (U+FF5E) sorts before "😀" (U+1F600) by code point, as the
 * stores must order text, but after it in UTF-16 units, as JavaScript's `<` would.
 */
export const KEYS = ["doc=1", "doc=😀", "mail=～", "mail=Z"] as const

export const key = fc.constantFrom(...KEYS)

/** Up to three keys in the caller's order, repeats allowed (the stores must cope with them). */
export const keys = fc.array(key, { maxLength: 3 })

/** Distinct keys, for records whose keys are a set. */
export const keySet = fc.uniqueArray(key, { maxLength: 3 })

export const toKey = (shown: string): CorrelationKey.CorrelationKey => {
  const [namespace = "", value = ""] = shown.split("=")
  return CorrelationKey.make(namespace, value)
}

export const toKeys = (shown: ReadonlyArray<string>) => shown.map(toKey)

/** Small JSON values, and a few that test a round trip: member order, -0, big and fractional numbers, astral text. */
export const json: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -2, max: 2 }),
  fc.constantFrom("a", "b"),
  fc.record({ n: fc.integer({ min: 0, max: 3 }) }),
  fc.constantFrom<Json>({ b: 1, a: [2, { d: null, c: true }] }, -0, 1e21, 0.1, '😀\u001f"', { "": "" }),
)

/** An index into a pool of 3; draws past the pool are rare enough to keep collisions. */
export const ref = (size: number) => fc.integer({ min: 0, max: size - 1 })

/** A pool of ids shared by both sides within one sequence, minted when the sequence starts. */
export interface Pools {
  readonly runs: ReadonlyArray<RunId>
  readonly cases: ReadonlyArray<CaseId>
  readonly effects: ReadonlyArray<EffectKey>
  readonly digests: ReadonlyArray<Digest.Digest>
}

export const pools = (): Pools => ({
  runs: [generateRunId(), generateRunId(), generateRunId()],
  cases: [generateCaseId(), generateCaseId()],
  effects: [effectKey(), effectKey(), effectKey()],
  digests: [Digest.of("a"), Digest.of("b"), Digest.of("c")],
})

/** Picks `pool[i]`, which the arbitraries keep in range. */
export const pick = <A>(pool: ReadonlyArray<A>, i: number): A => {
  const a = pool[i]
  if (a === undefined) throw new RangeError(`pool of ${pool.length} has no index ${i}`)
  return a
}

const effectKey = (): EffectKey => EffectKey.make(randomBytes(32).toString("hex"))
