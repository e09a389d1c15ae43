/**
 * Identifiers. Run, case and batch ids are prefixed ULIDs stored in their shown form, so text
 * order is creation order; the numeric ids are branded integers with their ranges.
 */
import { Either, Schema } from "effect"
import { monotonicFactory } from "ulid"
import { InvalidId } from "../errors/IdError.js"

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/

/**
 * The ULID library's randomness, one byte per call as its own default draws it (a byte over 256),
 * but from a pool the platform's CSPRNG fills 4 KiB at a time: its default asks the CSPRNG for
 * one byte per character, 16 calls per id, which was about 2% of a run's CPU.
 */
const pooledRandom = (): (() => number) => {
  const pool = new Uint8Array(4096)
  let at = pool.length
  return () => {
    if (at === pool.length) {
      globalThis.crypto.getRandomValues(pool)
      at = 0
    }
    return (pool[at++] as number) / 256
  }
}

// Monotonic, so ids minted in the same millisecond still sort in minting order.
const nextUlid = monotonicFactory(pooledRandom())

const prefixed = <const Brand extends string>(prefix: string, brand: Brand) => {
  const schema = Schema.String.pipe(
    Schema.pattern(new RegExp(`^${prefix}_[0-7][0-9A-HJKMNP-TV-Z]{25}$`), {
      message: () => `expected ${prefix}_<ULID>`,
    }),
    Schema.brand(brand),
  )
  type Id = typeof schema.Type
  // `make` cannot see through a brand that is still a type parameter, hence the `as never` below.
  const parse = (input: string): Either.Either<Id, InvalidId> => {
    const bare = input.startsWith(`${prefix}_`) ? input.slice(prefix.length + 1) : input
    const upper = bare.toUpperCase()
    if (!ULID.test(upper)) {
      const detail = input.includes("_")
        ? `expected ${prefix}_<ULID> or a bare ULID; the prefix or the ULID is wrong`
        : `expected ${prefix}_<ULID> or a bare 26-character ULID`
      return Either.left(new InvalidId({ kind: brand, input, detail }))
    }
    return Either.right(schema.make(`${prefix}_${upper}` as never))
  }
  const generate = (): Id => schema.make(`${prefix}_${nextUlid()}` as never)
  return { schema, parse, generate } as const
}

const run = prefixed("run", "RunId")
export const RunId = run.schema
export type RunId = typeof RunId.Type
export const parseRunId = run.parse
export const generateRunId = run.generate

const kase = prefixed("case", "CaseId")
export const CaseId = kase.schema
export type CaseId = typeof CaseId.Type
export const parseCaseId = kase.parse
export const generateCaseId = kase.generate

const batch = prefixed("batch", "BatchId")
export const BatchId = batch.schema
export type BatchId = typeof BatchId.Type
export const parseBatchId = batch.parse
export const generateBatchId = batch.generate

/** A step of a plan, 0 … 2³²−1; shown `s<n>`. */
export const StepId = Schema.Int.pipe(Schema.between(0, 0xffff_ffff), Schema.brand("StepId"))
export type StepId = typeof StepId.Type

/** A position in a run's chain, from 1. */
export const Seq = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1), Schema.brand("Seq"))
export type Seq = typeof Seq.Type

/** A lease's fencing token, from 1. */
export const Epoch = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1), Schema.brand("Epoch"))
export type Epoch = typeof Epoch.Type

/** A case's state version: 0 at opening, +1 for every accepted state write; shown `v<n>`. */
export const CaseVersion = Schema.NonNegativeInt.pipe(
  Schema.filter((n) => Number.isSafeInteger(n)),
  Schema.brand("CaseVersion"),
)
export type CaseVersion = typeof CaseVersion.Type

export const showStep = (step: StepId): string => `s${step}`
export const showVersion = (version: CaseVersion): string => `v${version}`
