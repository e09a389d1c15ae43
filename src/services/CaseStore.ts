/**
 * CaseStore (§5.1): cases, their correlation keys, runs, blob links and deadlines.
 */
import { Context, type Effect, type Option } from "effect"
import type { Case, CaseCensus, CaseStatus, Correlation } from "../domain/Case.js"
import type { CorrelationKey } from "../domain/CorrelationKey.js"
import type { Deadline, DeadlineState } from "../domain/Deadline.js"
import type { Digest } from "../domain/Digest.js"
import type { CaseId, CaseVersion, RunId } from "../domain/Ids.js"
import type { Json } from "../domain/Json.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type {
  Backend,
  CaseConflict,
  Corrupt,
  ImportRefused,
  NotFound,
  ObligationsOutstanding,
} from "../errors/StoreError.js"

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

export class CaseStore extends Context.Tag("agentplane/CaseStore")<
  CaseStore,
  {
    /** The open case holding the first of `keys` (in the given order) that any open case holds; none for no keys. */
    readonly correlate: (keys: ReadonlyArray<CorrelationKey>) => Read<Option.Option<CaseId>>
    /** Attaches to the open case holding any key, or opens one case holding them all; concurrent callers with one new key get one case. */
    readonly correlateOrOpen: (kind: string, keys: ReadonlyArray<CorrelationKey>, at: Timestamp) => Read<Correlation>
    /** The case with every key it ever held (by namespace, value) and its runs in attachment order. */
    readonly case: (id: CaseId) => Read<Option.Option<Case>>
    /** Up to `limit` cases with ids strictly after `after`, ascending: the export pager. */
    readonly cases: (after: Option.Option<CaseId>, limit: number) => Read<ReadonlyArray<Case>>
    /** Writes a case exactly as given in one transaction, never merging; fails with `ImportRefused` on an existing id or a held open key. */
    readonly importCase: (
      kase: Case,
      deadlines: ReadonlyArray<Deadline>,
      blobs: ReadonlyArray<Digest>,
    ) => Read<void, ImportRefused>
    /** Appends `run` at the next position (first is 0); a repeat changes nothing; fails with `NotFound` for a missing case. */
    readonly attachRun: (kase: CaseId, run: RunId) => Read<void, NotFound>
    /** Removes an attachment whose run was never written, leaving its position unused; `true` if one went. */
    readonly detachRun: (kase: CaseId, run: RunId) => Op<boolean>
    /** Records an artifact of the case for erasure; the first `writtenAt` stands; fails with `NotFound` for a missing case. */
    readonly linkBlob: (kase: CaseId, digest: Digest, at: Timestamp) => Op<void, NotFound>
    /** The case's blob digests by `writtenAt`, then digest, each once. */
    readonly blobsOf: (kase: CaseId) => Read<ReadonlyArray<Digest>>
    /** Writes `state` only at version `expected` and returns `expected + 1`; fails with `CaseConflict` or `NotFound`. */
    readonly putState: (kase: CaseId, expected: CaseVersion, state: Json) => Read<CaseVersion, CaseConflict | NotFound>
    /** `closed` behaves as `close`; any other status is a plain write; fails with `NotFound` or `ObligationsOutstanding`. */
    readonly setStatus: (kase: CaseId, status: CaseStatus) => Read<void, NotFound | ObligationsOutstanding>
    /** Closes the case and releases all its keys, refused with `ObligationsOutstanding` while deadlines are pending or warned. */
    readonly close: (kase: CaseId) => Read<void, NotFound | ObligationsOutstanding>
    /** Registers a deadline if its (case, name) is new, else keeps the first; fails with `NotFound` for a missing case. */
    readonly registerDeadline: (deadline: Deadline) => Op<void, NotFound>
    /** Every deadline of the case, ascending `resolvedAt`. */
    readonly deadlines: (kase: CaseId) => Read<ReadonlyArray<Deadline>>
    /** Sets a deadline's state without a transition guard; fails with `NotFound` naming `<case>/<name>`. */
    readonly setDeadlineState: (kase: CaseId, name: string, state: DeadlineState) => Op<void, NotFound>
    /** Pending or warned deadlines whose due or warning instant is at or before `now`, earliest due first. */
    readonly due: (now: Timestamp, limit: number) => Read<ReadonlyArray<Deadline>>
    /** Breached deadlines, longest overdue first, including those of closed cases. */
    readonly breached: (limit: number) => Read<ReadonlyArray<Deadline>>
    /** Cases in `status`, newest `openedAt` first: the worklist read. */
    readonly byStatus: (status: CaseStatus, limit: number) => Read<ReadonlyArray<Case>>
    /** Open cases, the oldest one's age and the deadlines due at `now`, counted in SQL. */
    readonly census: (now: Timestamp) => Read<CaseCensus>
  }
>() {}
