/**
 * Small builders for the CaseStore battery; seed data always goes through the store itself.
 */
import { Effect, Option } from "effect"
import * as CorrelationKey from "../../../src/domain/CorrelationKey.js"
import { Deadline, type DeadlineState } from "../../../src/domain/Deadline.js"
import * as Digest from "../../../src/domain/Digest.js"
import type { CaseId } from "../../../src/domain/Ids.js"
import * as Time from "../../../src/domain/Time.js"
import { CaseStore } from "../../../src/services/CaseStore.js"

export const at = (seconds: number): Time.Timestamp => Time.Timestamp.make(seconds)

export const key = (namespace: string, value: string) => CorrelationKey.make(namespace, value)

export const digest = (seed: string): Digest.Digest => Digest.of(seed)

/** Opens a case holding `keys` and returns its id. */
export const open = (keys: ReadonlyArray<CorrelationKey.CorrelationKey>, openedAt = 1_000, kind = "claim") =>
  Effect.flatMap(CaseStore, (store) => store.correlateOrOpen(kind, keys, at(openedAt))).pipe(Effect.map((c) => c.case))

export const deadline = (
  kase: CaseId,
  name: string,
  resolvedAt: number,
  state: DeadlineState = "pending",
  warnAt?: number,
): Deadline =>
  new Deadline({
    case: kase,
    name,
    resolvedAt: at(resolvedAt),
    calendarDigest: digest("calendar"),
    warnAt: warnAt === undefined ? Option.none() : Option.some(at(warnAt)),
    state,
  })

/** The case, which the test expects to exist. */
export const read = (id: CaseId) =>
  Effect.flatMap(CaseStore, (store) => store.case(id)).pipe(Effect.map(Option.getOrThrow))
