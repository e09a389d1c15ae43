/**
 * JournalStore (§6): the plan of record. Fencing (only the lease holder writes), exactly-once
 * (an effect starts once per run) and chaining (each record commits to its predecessor) hold in
 * the same transaction. Lease, activity, admission and cancellation times come from the
 * backend's clock; every other instant is the caller's.
 */
import { Context, Effect, type Option } from "effect"
import type { Digest } from "../domain/Digest.js"
import type { CaseId, Epoch, RunId } from "../domain/Ids.js"
import type {
  Append,
  Cancellation,
  Cursor,
  Head,
  ImportSeal,
  Lease,
  RecentRun,
  Record,
  RunOutcome,
  Verbatim,
} from "../domain/Journal.js"
import type { Tenant } from "../domain/Tenant.js"
import type { Timestamp } from "../domain/Time.js"
import type { Halted } from "../errors/QuotaError.js"
import type {
  Backend,
  CancelPending,
  Corrupt,
  DuplicateAdmission,
  DuplicateEffect,
  Fenced,
  LeaseHeld,
  LeaseNotHeld,
  RecordRefused,
  RecordTooLarge,
  RunSealed,
} from "../errors/StoreError.js"

/** Why an append wrote nothing, besides the backend failing. */
export type AppendError =
  | RunSealed
  | Fenced
  | RecordTooLarge
  | DuplicateEffect
  | DuplicateAdmission
  | LeaseHeld
  | Halted
  | CancelPending

type Op<A, E = never> = Effect.Effect<A, Backend | E, Tenant>
type Read<A, E = never> = Op<A, Corrupt | E>

/**
 * Writes of another store that must commit with a journal write, all or nothing: a wake-up's
 * release (disarm the timer, drop the wait) with the commit that makes its answer durable. The
 * SQL stores run it on the journal's transaction connection; the memory store runs it inside its
 * one synchronous step, so it must not suspend there (the memory stores' verbs never do). `form`,
 * when the store that made it gives one, says what it writes (see `Form`).
 */
export type Alongside = Effect.Effect<void, Backend, Tenant> & { readonly form?: Form }

/**
 * What an alongside writes, told by the store that made it, so a journal store over the same
 * database may fold it into its own statement instead of running it: a wake-up's seal and its
 * timer's disarm as one autocommitted statement on pg, instead of BEGIN, the seal, the disarm
 * and COMMIT. `form` is opaque to all but the two stores; `folded` runs in the effect's place
 * once a store folded it, so whoever wraps an alongside still learns that it committed. A
 * wrapper that does not carry the form on (any combinator makes a new effect without it) only
 * costs the fold: the journal store runs the effect instead.
 */
export interface Form {
  readonly form: unknown
  readonly folded: Effect.Effect<void>
}

/** `effect` as an alongside carrying `form`: a new effect, so the one given is left as it was. */
export const withForm = (effect: Effect.Effect<void, Backend, Tenant>, form: Form): Alongside =>
  Object.assign(
    Effect.suspend(() => effect),
    { form },
  )

/**
 * What an append may do beyond its records, decided in the same statement (pg) or transaction
 * (sqlite), so a run pays no round trip of its own for it:
 * - `open`: the run is new. Its lease is taken at epoch 1 for `owner` (the `epoch` passed must be
 *   1), the admission key of a `RunAdmitted` record in the batch is claimed, and the tenant's
 *   emergency stop (the quota store's halt, on the same backend) is checked, all with the first
 *   records: a halted tenant is `Halted`, a key held by another run `DuplicateAdmission`, a run
 *   that already has a lease `LeaseHeld`, and each writes nothing.
 * - `guardCancel`: the batch crosses a step boundary of the run's live execution and comes before
 *   an act: a stored cancellation request refuses it with `CancelPending`, writing nothing, so the
 *   runtime honours the request at that boundary instead of acting (§7.3).
 */
export interface AppendOptions {
  readonly open?: { readonly owner: string; readonly ttlSecs: number }
  readonly guardCancel?: boolean
}

export class JournalStore extends Context.Tag("agentplane/JournalStore")<
  JournalStore,
  {
    /** Appends the batch at head + 1… in one transaction under the run's current epoch and returns the records; all or nothing: `RunSealed`, `Fenced`, `RecordTooLarge`, `DuplicateEffect` or `DuplicateAdmission` write nothing. `alongside` runs in the same transaction once the batch is written (another store's verbs join it), so its writes and the batch commit together; its failure fails the append, writing nothing. `options` opens a new run or guards a step boundary in the same commit (`AppendOptions`). */
    readonly append: (
      run: RunId,
      epoch: Epoch,
      batch: readonly [Append, ...ReadonlyArray<Append>],
      alongside?: Alongside,
      options?: AppendOptions,
    ) => Read<ReadonlyArray<Record>, AppendError>
    /** Claims a run with no lease, a released or an expired one at epoch previous + 1 (first 1); a live lease fails with `LeaseHeld`, even for the same owner. */
    readonly acquire: (run: RunId, owner: string, ttlSecs: number) => Read<Lease, LeaseHeld>
    /** Claims each of `runs` as `acquire` would, all in one statement, and returns the leases granted, in no particular order; a run whose lease is live (even for the same owner) is simply absent, a run named twice counts once, and a run granted to one concurrent caller is absent from every other's answer. */
    readonly acquireMany: (runs: ReadonlyArray<RunId>, owner: string, ttlSecs: number) => Read<ReadonlyArray<Lease>>
    /** Extends the live, unreleased lease held by exactly (owner, epoch) by `ttlSecs` from now; anything else fails with `LeaseNotHeld`. */
    readonly renew: (run: RunId, owner: string, epoch: Epoch, ttlSecs: number) => Read<Lease, LeaseNotHeld>
    /** Frees the lease when `epoch` is current (owner blanked, epoch kept); a stale epoch or a repeat is a silent no-op. */
    readonly releaseLease: (run: RunId, epoch: Epoch) => Op<void>
    /** Runs whose lease expired with an owner still on it, earliest expiry first (ties by run). */
    readonly abandonedRuns: (limit: number) => Read<ReadonlyArray<RunId>>
    /** Freezes the run under its current epoch and returns its chain head (ZERO when unwritten), after appending `last` in the same transaction when given; a stale epoch fails with `Fenced`, a second seal with `RunSealed`, and `last` fails as `append` would, sealing nothing. A seal whose `last` holds no `RunSealed` record indexes `outcome` for `runsByOutcome` itself. The same commit releases the lease it sealed under (as `releaseLease(run, epoch)`): a sealed run has nothing left to fence, and its holder's separate release after the seal would be one more commit, or a lease left for recovery to find if it never came. `alongside` rides in the seal's transaction as in `append`; `guardCancel` refuses it over a stored cancellation request (`CancelPending`), sealing nothing, as it refuses an append. */
    readonly seal: (
      run: RunId,
      epoch: Epoch,
      outcome: RunOutcome,
      last?: readonly [Append, ...ReadonlyArray<Append>],
      alongside?: Alongside,
      options?: { readonly guardCancel?: boolean },
    ) => Read<Digest, Fenced | RunSealed | RecordTooLarge | DuplicateEffect | DuplicateAdmission | CancelPending>
    /** The run's records with `seq >= from`, ascending; empty for an unwritten run; a body that does not decode is `Corrupt{seq}`. */
    readonly read: (run: RunId, from: number) => Read<ReadonlyArray<Record>>
    /** `{seq, hash}` of the run's last record; `{0, ZERO}` for an unwritten run. */
    readonly head: (run: RunId) => Read<Head>
    /** Runs whose latest `RunSealed` record names `outcome`, most recent conclusion first. */
    readonly runsByOutcome: (outcome: RunOutcome, limit: number) => Read<ReadonlyArray<RunId>>
    /** The run holding the admission key; none when unclaimed. */
    readonly admittedAs: (key: string) => Read<Option.Option<RunId>>
    /** Frees every admission key admitted at or before `olderThan` and returns how many; runs are untouched. */
    readonly forgetAdmissions: (olderThan: Timestamp) => Op<number>
    /** Runs by (updatedAt desc, run desc), strictly after the cursor when given; paging reassembles the full list exactly. */
    readonly recentRuns: (after: Option.Option<Cursor>, limit: number) => Read<ReadonlyArray<RecentRun>>
    /** Records stamped with the case, oldest first by (run, seq). */
    readonly caseHistory: (kase: CaseId, limit: number) => Read<ReadonlyArray<Record>>
    /** Stores the first cancellation request of a run (`true`); later ones change nothing (`false`); needs no lease. */
    readonly requestCancel: (run: RunId, actor: string, reason: string) => Op<boolean>
    /** The stored cancellation request; none when there is none. */
    readonly cancellation: (run: RunId) => Read<Option.Option<Cancellation>>
    /** Recomputes the run's chain from the stored bytes and returns its head; the first break is `Corrupt{seq}`. */
    readonly verify: (run: RunId) => Read<Head>
    /** Runs that have records, by id ascending, strictly after `after` when given: the export pager. */
    readonly runs: (after: Option.Option<RunId>, limit: number) => Read<ReadonlyArray<RunId>>
    /** Up to `limit` of the run's records with `seq >= from`, ascending: `read` in pages, so a long run streams. */
    readonly readPage: (run: RunId, from: number, limit: number) => Read<ReadonlyArray<Record>>
    /** The run's last record and the records its policy decisions are read from, ascending, each once (`ViewRecords`): every `PolicyDenied`, `Released` and keyed `Note`, every `EffectDone` the worklist answered, the announcements under those Notes' and answers' effect keys, and, after a keyed Note with no such answer of its (phase, step) after it, that step's announcements; in at most two statements through an index of those records, so the read follows them and not the journal's length; empty for an unwritten run. */
    readonly viewRecords: (run: RunId) => Read<ReadonlyArray<Record>>
    /** Writes the records verbatim (raw, hashes, attestation) in one transaction, each continuing its run's stored chain, with the derived indexes `append` keeps, then seals each of `seals`, in order, at its head (a run with no records at the zero head), each taking the next log position; all or nothing: a sealed run, a record that does not continue its chain or does not decode, or a claimed admission key fails with `RecordRefused`; returns the number of records written. */
    readonly importRecords: (
      records: ReadonlyArray<Verbatim>,
      seals: ReadonlyArray<ImportSeal>,
    ) => Read<number, RecordRefused>
  }
>() {}
