/**
 * The shapes of a wake-up (§7.9 resumeSubscription, §7.10 timers), which the engine's wake-up
 * flow (`engine/Wake.ts`), the timer pass and the deliveries share, and the answer a wake-up
 * stages for the woken run.
 */
import { type Effect, Option } from "effect"
import * as Digest from "../domain/Digest.js"
import type * as EffectKey from "../domain/EffectKey.js"
import type { Epoch, RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import type { Tenant, TenantId } from "../domain/Tenant.js"
import type { Backend } from "../errors/StoreError.js"
import * as Waits from "./Waits.js"

/** A resume started by a wake-up: whether its answer is staged, the durable head before it, and what retires the wait in the commit that makes the answer durable. */
export interface Woken {
  readonly staged: boolean
  readonly durableSeq: number
  readonly release: Effect.Effect<void, Backend, Tenant>
  /** Told, once, whether the answer became durable (the first call wins). */
  readonly settled?: (durable: boolean) => void
}

/** What the caller's half of a wake-up found: the owner is live, the run does not wait (or is sealed), or the resume to run (and its lease's renewal while it queues for a permit). */
export type Woke =
  | { readonly _tag: "Busy" }
  | { readonly _tag: "NotWaiting" }
  | {
      readonly _tag: "Resumed"
      /** Run in a fiber of the caller's tenant: a pass or delivery forks it, and a fork inherits the context. */
      readonly resume: Effect.Effect<void, never, Tenant>
      readonly lease: Holding
    }

/** A lease the runtime renews while it holds it: the run, its epoch, and the tenant it is of. */
export interface Holding {
  readonly run: RunId
  readonly epoch: Epoch
  readonly tenant: TenantId
  /** Whether the lease exists yet: a new run's is taken by its first commit; absent, it was taken before. */
  readonly taken?: () => boolean
}

/** A wake-up's answer: the append the writer stages, the record it becomes once durable (so the replay finds it now), and the durable head it follows. */
export interface Staged {
  readonly append: Journal.Append
  readonly record: Journal.Record
  readonly head: Journal.Head
}

/** The record a wake-up's answer becomes after the journal `records`, as the store will write it. */
export const stage = (
  run: RunId,
  records: ReadonlyArray<Journal.Record>,
  started: Journal.Record,
  effect: EffectKey.EffectKey,
  output: Json,
  source: string,
): Staged => {
  const append = Waits.done(started, effect, output, source)
  const last = records[records.length - 1]
  const head = last === undefined ? { seq: 0, hash: Digest.ZERO } : { seq: last.seq, hash: last.hash }
  const seq = (head.seq + 1) as Journal.Record["seq"]
  // The bytes and hash the store will give it (the writer's conclude relies on the same).
  const body = Journal.encoded(append, run, seq)
  const record = new Journal.Record(
    {
      run,
      seq,
      case: append.case,
      step: append.step,
      phase: append.phase,
      effectKey: append.effectKey,
      kind: append.kind,
      prevHash: head.hash,
      hash: Journal.chained(body, head.hash),
      attestation: Option.none(),
      raw: body.raw,
      // Built from a validated append and the head the store returned: validating again costs CPU only.
    },
    true,
  )
  return { append, record, head }
}
