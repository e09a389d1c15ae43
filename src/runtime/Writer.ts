/**
 * The run's journal writer: what rides together is appended together (§7.1, §7.11 "announce
 * before every act").
 *
 * Records are staged and appended in the next batch that must be durable, and the one rule that
 * forces a batch is that nothing acts while anything is staged: every announcement, of a read as
 * much as of a write, is flushed before its act (`flush([announcement])`), and `beforeAct` flushes
 * whatever else waits (an outcome, a boundary) before an act that announced earlier (a retry, a
 * probe). So a record only ever shares its commit with records before it: the admission and the
 * case binding ride with the first announcement, an outcome with the next announcement or the
 * conclusion, and a wake-up's answer with the woken run's first commit, and none of them is ever
 * written after an act that followed it. An effect costs one commit for its announce, and its
 * outcome rides with the next. Strict replay writes nothing: every write here is a no-op there.
 *
 * Two checks ride in those commits instead of costing round trips of their own. A new run's first
 * batch opens it (`open`): the lease at epoch 1, the admission key and the tenant's halt are
 * settled in that same commit. And the first batch of a step that holds the step's boundary
 * (`stageGuarded`) is refused if a cancellation request is stored: the request is then honoured
 * at that boundary, exactly as a read there would have honoured it, since nothing of the step has
 * acted (its act waits on this very commit): the step's records are dropped, `RunCancelled`
 * takes the boundary's place, and the flush fails with `CancelPending` for the caller to stop
 * the run (§7.3).
 */
import { type Context, Effect, Option } from "effect"
import type { CaseId, Epoch, RunId, StepId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { Phase } from "../domain/Phase.js"
import { Tenant, type TenantId } from "../domain/Tenant.js"
import type { Backend, CancelPending, Corrupt } from "../errors/StoreError.js"
import * as JournalStore from "../services/JournalStore.js"
import * as History from "./History.js"

export type Mode = "live" | "resume" | "strict"

/** What a flush or seal can fail with: whatever the journal's append refuses, or its backend. */
export type WriteError = JournalStore.AppendError | Backend | Corrupt

export interface Writer {
  readonly mode: Mode
  readonly run: RunId
  readonly epoch: Option.Option<Epoch>
  /** Stages a record for the next batch; keyed records always go, unkeyed ones by the positional rule. */
  readonly stage: (append: Journal.Append) => void
  /**
   * Stages a step's `StepStarted` as a guarded boundary: the batch that carries it is refused
   * over a stored cancellation request (see the header). Only a step that runs alone past the
   * journal's end is guarded, and of several staged the last is the one a refusal honours.
   */
  readonly stageGuarded: (boundary: Journal.Append) => void
  /** Whether a guarded boundary is staged and not yet committed. */
  readonly guarded: () => boolean
  /** The step whose boundary a refused batch honoured a cancellation at (the flush failed with `CancelPending`). */
  readonly honouredAt: () => StepId | undefined
  /** Appends everything staged, plus `also`, in one batch (nothing staged: no commit). */
  readonly flush: (also?: ReadonlyArray<Journal.Append>) => Effect.Effect<void, WriteError>
  /** Appends everything staged and seals the run, in one transaction (a sealed conclusion costs one commit). */
  readonly seal: (outcome: Journal.RunOutcome) => Effect.Effect<void, WriteError>
  /** Flushes whatever is staged; called before every act, so no act runs ahead of a record that precedes it. */
  readonly beforeAct: () => Effect.Effect<void, WriteError>
  /** Stages the conclusion with the chain head it is written after (computed here, as the batch will hash it). */
  readonly conclude: (
    at: { readonly case: Option.Option<CaseId>; readonly step: StepId },
    outcome: Journal.RunOutcome,
    reason: Option.Option<string>,
  ) => void
  /** How many records the run's journal holds or has staged: the `recorded` meter. */
  readonly records: () => number
  /** How many records are durable. */
  readonly durable: () => number
  /** Whether `seal` committed: the seal released the lease with it, so the driver's release is owed no more. */
  readonly sealed: () => boolean
  /** Whether the wake-up's `release` committed with one of this writer's batches (then the driver owes it no more). */
  readonly released: () => boolean
}

export const make = (options: {
  readonly mode: Mode
  readonly run: RunId
  readonly epoch: Option.Option<Epoch>
  readonly history: History.History
  /**
   * Records already in `history` but not yet durable (a wake-up's answer, §7.9): they go first in
   * the next batch, and `head` is the durable head they follow.
   */
  readonly staged?: { readonly appends: ReadonlyArray<Journal.Append>; readonly head: Journal.Head }
  /**
   * A wake-up's release (disarm the timer, drop the wait): it rides in the transaction of the
   * next batch, the one that makes the answer durable, so the answer and the release commit
   * together or not at all, and the release costs no commit of its own.
   */
  readonly release?: JournalStore.Alongside
  /**
   * The store and tenant every batch goes to, handed in rather than read from a provided context:
   * a provide is a scoped swap of the fiber's context, a woken run makes a writer each time, and
   * the caller holds both already. The tenant is pinned here, so a step body that provides
   * another cannot move the run's writes.
   */
  readonly journal: Context.Tag.Service<JournalStore.JournalStore>
  readonly tenant: TenantId
  /**
   * Called once, right after the first batch commits: a wake-up's staged answer is durable from
   * then on, which is when a timer pass may count its timer fired (§7.11).
   */
  readonly onFirstCommit?: () => void
  /** A new run: its first batch takes the lease (epoch 1) with it (`JournalStore.AppendOptions.open`). */
  readonly open?: { readonly owner: string; readonly ttlSecs: number }
}): Effect.Effect<Writer> =>
  Effect.gen(function* () {
    const { mode, run, history, journal, tenant } = options
    const lock = yield* Effect.makeSemaphore(1)
    let pending: Array<Journal.Append> = mode === "strict" ? [] : [...(options.staged?.appends ?? [])]
    let head = options.staged?.head ?? history.head
    let sealed = false
    let committed = false
    const firstCommit = () => {
      if (committed) return
      committed = true
      options.onFirstCommit?.()
    }
    let released = false
    // Set by the release itself, inside the store's transaction, or by its `folded` when the
    // store wrote it in its own statement: a journal wrapper that does not pass `alongside` on
    // leaves it unset, and the driver releases separately, as before.
    let ran = false
    const ranNow = Effect.sync(() => {
      ran = true
    })
    const alongside = (): JournalStore.Alongside | undefined => {
      if (options.release === undefined || released) return undefined
      const wrapped = Effect.tap(options.release, ranNow)
      // A store that folds the release into its own statement runs `folded` in its place.
      const form = options.release.form
      return form === undefined
        ? wrapped
        : JournalStore.withForm(wrapped, { form: form.form, folded: Effect.zipRight(form.folded, ranNow) })
    }
    const settle = () => {
      if (ran) released = true
      ran = false
    }
    const offered = new Map<string, number>()
    // Where the last guarded boundary sits in `pending`, while it is staged and not yet committed.
    let guarded: number | undefined
    // The step at which a refused batch staged `RunCancelled`.
    let honoured: StepId | undefined
    const optionsOf = (): JournalStore.AppendOptions => ({
      ...(!committed && options.open !== undefined ? { open: options.open } : {}),
      ...(guarded !== undefined ? { guardCancel: true } : {}),
    })
    /**
     * A batch refused over a cancellation request: what came before its last guarded boundary
     * stays staged, the records from the boundary on go (nothing of them was observed: none has
     * acted, and they were not durable), and `RunCancelled` stands where that StepStarted stood.
     */
    const refused = (batch: ReadonlyArray<Journal.Append>, at: number | undefined) => (request: CancelPending) =>
      Effect.sync(() => {
        const boundary = batch[at ?? 0] as Journal.Append
        honoured = boundary.step
        pending = [
          ...batch.slice(0, at),
          Journal.built({
            case: boundary.case,
            step: boundary.step,
            phase: boundary.phase,
            effectKey: Option.none(),
            kind: { kind: "RunCancelled", actor: request.actor, reason: request.reason },
          }),
        ]
      })

    const stage = (append: Journal.Append): void => {
      if (mode === "strict") return
      if (Option.isNone(append.effectKey)) {
        const at = History.positionOf(append.step, append.phase, append.kind.kind)
        const n = offered.get(at) ?? 0
        offered.set(at, n + 1)
        if (History.repeats(history, at, n, append.kind)) return
      }
      pending.push(append)
    }

    const flush = (also: ReadonlyArray<Journal.Append> = []) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          for (const a of also) stage(a)
          if (mode === "strict" || pending.length === 0) return
          const epoch = Option.getOrThrowWith(options.epoch, () => new Error("a writing mode needs a lease"))
          const batch = pending
          const at = guarded
          const appendOptions = optionsOf()
          pending = []
          guarded = undefined
          ran = false
          const written = yield* journal
            .append(run, epoch, batch as [Journal.Append, ...Array<Journal.Append>], alongside(), appendOptions)
            .pipe(Effect.provideService(Tenant, tenant), Effect.tapErrorTag("CancelPending", refused(batch, at)))
          settle()
          const last = written[written.length - 1]
          if (last !== undefined) head = { seq: last.seq, hash: last.hash }
          firstCommit()
        }),
      )

    const seal = (outcome: Journal.RunOutcome) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          if (mode === "strict") return
          const epoch = Option.getOrThrowWith(options.epoch, () => new Error("a writing mode needs a lease"))
          let batch = pending
          const at = guarded
          const sealOptions = optionsOf()
          pending = []
          guarded = undefined
          ran = false
          if (sealOptions.open !== undefined && batch.length > 0) {
            // A run that concludes before its first flush (it never acted) is opened first: the
            // seal needs the lease that opening takes. Two commits, for a run that did nothing.
            const opened = yield* journal
              .append(run, epoch, batch as [Journal.Append, ...Array<Journal.Append>], alongside(), sealOptions)
              .pipe(Effect.provideService(Tenant, tenant), Effect.tapErrorTag("CancelPending", refused(batch, at)))
            settle()
            const last = opened[opened.length - 1]
            if (last !== undefined) head = { seq: last.seq, hash: last.hash }
            firstCommit()
            batch = []
          }
          const [first, ...others] = batch
          const guard = sealOptions.guardCancel === true && first !== undefined ? { guardCancel: true } : {}
          const hash = yield* journal
            .seal(run, epoch, outcome, first === undefined ? undefined : [first, ...others], alongside(), guard)
            .pipe(Effect.provideService(Tenant, tenant), Effect.tapErrorTag("CancelPending", refused(batch, at)))
          settle()
          head = { seq: head.seq + batch.length, hash }
          sealed = true
          firstCommit()
        }),
      )

    return {
      mode,
      run,
      epoch: options.epoch,
      stage,
      stageGuarded: (boundary) => {
        if (mode === "strict") return
        guarded = pending.length
        stage(boundary)
        // The positional rule kept it out (a repeat): nothing of it to guard.
        if (pending.length === guarded) guarded = undefined
      },
      guarded: () => guarded !== undefined,
      honouredAt: () => honoured,
      flush,
      seal,
      beforeAct: () => Effect.suspend(() => (pending.length > 0 ? flush() : Effect.void)),
      conclude: (at, outcome, reason) => {
        // The conclusion names the head it follows; with records still staged ahead of it, that
        // head is computed here exactly as the store will hash the batch.
        let seq = head.seq
        let hash = head.hash
        for (const p of pending) {
          seq += 1
          hash = Journal.chained(Journal.encoded(p, run, seq as Journal.Record["seq"]), hash)
        }
        stage(
          Journal.built({
            case: at.case,
            step: at.step,
            phase: "forward" satisfies Phase,
            effectKey: Option.none(),
            kind: {
              kind: "RunSealed",
              outcome,
              chain_head: hash,
              ...(Option.isSome(reason) ? { reason: reason.value } : {}),
            },
          }),
        )
      },
      records: () => head.seq + pending.length,
      durable: () => head.seq,
      sealed: () => sealed,
      released: () => released,
    }
  })
