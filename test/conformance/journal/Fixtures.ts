/**
 * Small builders for the JournalStore battery; seed data always goes through the store itself.
 */
import { randomBytes } from "node:crypto"
import type { Vitest } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Digest from "../../../src/domain/Digest.js"
import { EffectKey } from "../../../src/domain/EffectKey.js"
import { type CaseId, generateRunId, StepId } from "../../../src/domain/Ids.js"
import * as Journal from "../../../src/domain/Journal.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import type { Stores } from "../../support/Backend.js"

/** The `it.effect` the JournalStore battery receives. */
export type Tester = Vitest.Tester<JournalStore | Stores>

export const effectKey = (): EffectKey => EffectKey.make(randomBytes(32).toString("hex"))

interface Stamp {
  readonly case?: CaseId
  readonly step?: number
  readonly effect?: EffectKey
  readonly phase?: "forward" | "compensating"
}

export const entry = (kind: Journal.Kind, stamp: Stamp = {}) =>
  Journal.Append.make({
    case: Option.fromNullable(stamp.case),
    step: StepId.make(stamp.step ?? 0),
    effectKey: Option.fromNullable(stamp.effect),
    kind,
    ...(stamp.phase === undefined ? {} : { phase: stamp.phase }),
  })

export const note = (text: string, stamp: Stamp = {}) => entry({ kind: "Note", text }, stamp)

export const started = (effect: EffectKey, stamp: Stamp = {}) =>
  entry(
    {
      kind: "EffectStarted",
      descriptor: { tool: "mail.send" },
      recovery: "retry",
      mutates: true,
      attempt: 1,
      backoff_ms: 0,
      outbound_label: "public",
    },
    { ...stamp, effect },
  )

export const admitted = (key?: string) =>
  entry({
    kind: "RunAdmitted",
    capability: "refunds",
    input: { amount: 12 },
    input_label: "internal",
    policy_bundle: "bundle-1",
    canon: 1,
    ...(key === undefined ? {} : { idempotency_key: key }),
  })

export const concluded = (outcome: Journal.RunOutcome) => entry({ kind: "RunSealed", outcome, chain_head: Digest.ZERO })

/** A new run leased to `owner` for a minute. */
export const leased = (owner = "worker-a") =>
  Effect.gen(function* () {
    const store = yield* JournalStore
    const run = generateRunId()
    const lease = yield* store.acquire(run, owner, 60)
    return { run, epoch: lease.epoch, lease }
  })

/** A new leased run with `n` notes appended. */
export const written = (n: number, stamp: Stamp = {}) =>
  Effect.gen(function* () {
    const store = yield* JournalStore
    const { run, epoch } = yield* leased()
    const batch = Array.from({ length: n }, (_, i) => note(`note ${i + 1}`, stamp))
    const [first, ...rest] = batch
    const records = first === undefined ? [] : yield* store.append(run, epoch, [first, ...rest])
    return { run, epoch, records }
  })

export const one = <A>(a: A): readonly [A] => [a]
