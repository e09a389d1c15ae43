/**
 * JournalStore in process memory (§6), written from the contract as the reference model the SQL
 * layers are compared against and as a public layer for users' tests.
 *
 * Every verb is atomic by construction: it reads the tenant and the clock, then does all of its
 * reading, checking and writing in one synchronous body (`Effect.suspend` returning an `Either`),
 * so fencing, exactly-once and chaining are decided against one state and no other fiber runs
 * between a check and the write it guards. An append validates its whole batch before it writes
 * anything, which is what makes it all or nothing. State is plain `Map`s keyed by tenant first.
 *
 * The backend's clock (lease, activity, admission and cancellation times) is Effect's `Clock` in
 * whole seconds: the real clock in production, and a `TestClock` moves lease expiry in a test.
 * Records are kept as the canonical bytes they were written with and decoded afresh on every
 * read, so a caller never holds a reference into the store.
 */
import { Cause, Effect, Either, Exit, Layer, Option } from "effect"
import * as Digest from "../../domain/Digest.js"
import { type RunId, Seq } from "../../domain/Ids.js"
import * as Journal from "../../domain/Journal.js"
import { LogLeaf } from "../../domain/LogLeaf.js"
import type { Tenant, TenantId } from "../../domain/Tenant.js"
import { Timestamp } from "../../domain/Time.js"
import { Halted } from "../../errors/QuotaError.js"
import {
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
  type RunSealed,
} from "../../errors/StoreError.js"
import { type Alongside, type AppendOptions, JournalStore } from "../../services/JournalStore.js"
import * as ViewRecords from "../internal/ViewRecords.js"
import * as Halts from "./internal/Halts.js"
import {
  headOf,
  mustHold,
  nowSecs,
  type Row,
  restore,
  snapshot,
  type Tables,
  toLease,
  toRecord,
  wholeTtl,
} from "./internal/JournalTables.js"
import { clampLimit, compareText, perTenantEither } from "./internal/Memory.js"
import * as Sequenced from "./internal/Sequenced.js"

type AppendError = RunSealed | Fenced | RecordTooLarge | DuplicateEffect | DuplicateAdmission | Corrupt

/** `halts`: the emergency stops an opening append checks, shared with the quota store of the same build (`MemoryBackend`). */
/** `sequenced`: the tenants' sealed leaves, shared with the log store of the same build (`MemoryBackend`). */
export const make = (
  halts: Halts.Halts = Halts.make(),
  sequenced: Sequenced.Sequenced = Sequenced.make(),
): Effect.Effect<typeof JournalStore.Service> => Effect.sync(() => store(halts, sequenced))

const store = (halts: Halts.Halts, sequenced: Sequenced.Sequenced): typeof JournalStore.Service => {
  const tables = perTenantEither(
    (): Tables => ({
      journal: new Map(),
      leases: new Map(),
      seals: new Map(),
      outcomes: new Map(),
      admissions: new Map(),
      activity: new Map(),
      cancels: new Map(),
    }),
  )
  // Across tenants, as the database sequence is: only their order within a tenant is observable.
  let lastOrdinal = 0

  /** The run's leaf appended to the tenant's log: its position, dense from 0 per tenant. */
  const sequence = (tenant: TenantId, run: RunId, outcome: Journal.RunOutcome, head: Journal.Head): number =>
    sequenced.push(tenant, new LogLeaf({ run, chainHead: head.hash, records: head.seq, outcome }))

  /** Runs `f` on the caller's tenant's tables at the clock's current whole second, in one synchronous step. */
  const atomically = <R extends Either.Either<unknown, unknown>>(
    f: (tables: Tables, now: number, tenant: TenantId) => R,
  ) => Effect.clockWith((clock) => tables((t, tenant) => f(t, nowSecs(clock), tenant)))

  /**
   * `atomically` with another store's writes riding along (`JournalStore.Alongside`): once `f`
   * has written, `alongside` runs to completion inside the same synchronous step, and if it fails
   * the run's rows are put back as they were, so the two commit together or not at all and no
   * fiber ever sees one without the other.
   */
  const atomicallyWith = <A, E>(
    run: RunId,
    batch: ReadonlyArray<Journal.Append>,
    alongside: Alongside | undefined,
    f: (tables: Tables, now: number, tenant: TenantId) => Either.Either<A, E>,
  ) =>
    alongside === undefined
      ? atomically(f)
      : Effect.flatMap(Effect.context<Tenant>(), (context) =>
          atomically((t, now, tenant): Either.Either<A, E | Backend> => {
            const before = snapshot(t, run, batch)
            const logSize = sequenced.size(tenant)
            const done = f(t, now, tenant)
            if (Either.isLeft(done)) return done
            const ran = Effect.runSyncExit(Effect.provide(alongside, context))
            if (Exit.isSuccess(ran)) return done
            restore(t, run, before)
            sequenced.truncate(tenant, logSize)
            return Either.left(
              Option.getOrElse(
                Cause.failureOption(ran.cause),
                () =>
                  new Backend({
                    detail: `a write alongside the journal did not complete: ${Cause.pretty(ran.cause)}`,
                  }),
              ),
            )
          }),
        )

  /** Checks, hashes and writes a batch; nothing is written unless all of it passes. */
  const appendTo = (
    tables: Tables,
    now: number,
    run: RunId,
    epoch: number,
    batch: ReadonlyArray<Journal.Append>,
  ): Either.Either<ReadonlyArray<Journal.Record>, AppendError> => {
    const refused = mustHold(tables, run, epoch)
    if (refused !== undefined) return Either.left(refused)
    // Validate and hash the whole batch first; nothing below is written unless all of it passes.
    const chain = tables.journal.get(run) ?? []
    let head = headOf(chain)
    const rows: Array<Row> = []
    const claimed = new Map<string, RunId>()
    // Every record's size before anything else: the SQL stores build the whole batch before they
    // write, and find a duplicate effect or admission only by writing, so an oversized record is
    // the answer whatever else the batch holds (the model test found the two orders apart).
    const raws = batch.map((entry, i) => Journal.body({ ...entry, run, seq: Seq.make(head.seq + 1 + i) }))
    const oversized = raws.find((raw) => raw.length > Journal.MAX_RECORD_BYTES)
    if (oversized !== undefined) {
      return Either.left(new RecordTooLarge({ bytes: oversized.length, limit: Journal.MAX_RECORD_BYTES }))
    }
    // Exactly once per (run, key), counting this batch's earlier records too; every start of the
    // batch before any admission, as the spec orders them (§6.3: exactly-once, then the derived
    // indexes) and as the SQL stores find them (the records' insert, then the admission claim).
    // Checked per record in batch order, a batch admitting a held key before repeating a start
    // answered DuplicateAdmission here and DuplicateEffect there (the model test found it).
    const starts = new Set<string>()
    for (const r of chain) if (r.kind === "EffectStarted" && Option.isSome(r.effectKey)) starts.add(r.effectKey.value)
    for (const entry of batch) {
      if (entry.kind.kind !== "EffectStarted" || Option.isNone(entry.effectKey)) continue
      const key = entry.effectKey.value
      if (starts.has(key)) return Either.left(new DuplicateEffect({ run, effect: key }))
      starts.add(key)
    }
    for (const [i, entry] of batch.entries()) {
      const seq = Seq.make(head.seq + 1)
      const raw = raws[i] as Uint8Array
      if (entry.kind.kind === "RunAdmitted" && entry.kind.idempotency_key !== undefined) {
        const key = entry.kind.idempotency_key
        const holder = tables.admissions.get(key)?.run ?? claimed.get(key)
        if (holder !== undefined) return Either.left(new DuplicateAdmission({ key, run: holder }))
        claimed.set(key, run)
      }
      const hash = Digest.chain(head.hash, raw)
      rows.push({
        seq,
        kind: entry.kind.kind,
        effectKey: entry.effectKey,
        case: entry.case,
        prevHash: head.hash,
        hash,
        raw,
      })
      head = { seq, hash }
    }
    const records = Either.all(rows.map((row) => toRecord(run, row)))
    if (Either.isLeft(records)) return records

    tables.journal.set(run, [...chain, ...rows])
    for (const key of claimed.keys()) tables.admissions.set(key, { run, admittedAt: now })
    for (const entry of batch) {
      // Last conclusion wins: a failed run concluded again by a resume moves to its new outcome.
      if (entry.kind.kind === "RunSealed") {
        lastOrdinal += 1
        tables.outcomes.set(run, { outcome: entry.kind.outcome, ordinal: lastOrdinal })
      }
    }
    // A batch with no case keeps the case the run was last stamped with.
    const lastCase = Option.firstSomeOf([...batch].reverse().map((a) => a.case))
    const previous = tables.activity.get(run)?.case ?? Option.none()
    tables.activity.set(run, { updatedAt: now, case: Option.orElse(lastCase, () => previous) })
    return records
  }

  /**
   * A verbatim import: every record is checked against the chain as stored plus the records before
   * it in this call, then everything is written at once, so a refusal writes nothing.
   */
  const importTo = (
    tables: Tables,
    now: number,
    tenant: TenantId,
    records: ReadonlyArray<Journal.Verbatim>,
    seals: ReadonlyArray<Journal.ImportSeal>,
  ): Either.Either<number, RecordRefused> => {
    const chains = new Map<RunId, Array<Row>>()
    const claimed = new Map<string, RunId>()
    const concluded: Array<{ readonly run: RunId; readonly outcome: Journal.RunOutcome }> = []
    for (const record of records) {
      const refuse = (detail: string) => Either.left(new RecordRefused({ run: record.run, seq: record.seq, detail }))
      const sealed = tables.seals.get(record.run)
      if (sealed !== undefined) return refuse(`the run is sealed (${sealed.outcome})`)
      let chain = chains.get(record.run)
      if (chain === undefined) {
        chain = [...(tables.journal.get(record.run) ?? [])]
        chains.set(record.run, chain)
      }
      const head = headOf(chain)
      const body = Journal.checkVerbatim(record, head)
      if (Either.isLeft(body)) return refuse(body.left)
      const kind = body.right.kind
      if (kind.kind === "EffectStarted" && Option.isSome(body.right.effectKey)) {
        const key = body.right.effectKey.value
        if (chain.some((r) => r.kind === "EffectStarted" && Option.contains(r.effectKey, key)))
          return refuse(`effect ek:${key} already started in this run`)
      }
      if (kind.kind === "RunAdmitted" && kind.idempotency_key !== undefined) {
        const holder = tables.admissions.get(kind.idempotency_key)?.run ?? claimed.get(kind.idempotency_key)
        if (holder !== undefined)
          return refuse(`admission key ${JSON.stringify(kind.idempotency_key)} is held by run ${holder}`)
        claimed.set(kind.idempotency_key, record.run)
      }
      if (kind.kind === "RunSealed") concluded.push({ run: record.run, outcome: kind.outcome })
      chain.push({
        seq: record.seq,
        kind: kind.kind,
        effectKey: body.right.effectKey,
        case: body.right.case,
        prevHash: record.prevHash,
        hash: record.hash,
        raw: Buffer.from(record.raw),
        attestation: record.attestation,
      })
    }
    // A run this call writes seals at the head it wrote; another at its stored head (none: a bare seal at ZERO).
    const sealing = new Set<RunId>()
    for (const seal of seals) {
      if (sealing.has(seal.run))
        return Either.left(new RecordRefused({ run: seal.run, seq: 0, detail: "a seal must name a run once" }))
      const sealed = tables.seals.get(seal.run)
      if (sealed !== undefined)
        return Either.left(
          new RecordRefused({ run: seal.run, seq: 0, detail: `the run is sealed (${sealed.outcome})` }),
        )
      sealing.add(seal.run)
    }
    for (const [run, chain] of chains) {
      tables.journal.set(run, chain)
      const stamped = Option.firstSomeOf([...chain].reverse().map((r) => r.case))
      tables.activity.set(run, { updatedAt: now, case: stamped })
    }
    for (const [key, run] of claimed) tables.admissions.set(key, { run, admittedAt: now })
    for (const { run, outcome } of concluded) {
      lastOrdinal += 1
      tables.outcomes.set(run, { outcome, ordinal: lastOrdinal })
    }
    for (const seal of seals) {
      const head = headOf(tables.journal.get(seal.run) ?? [])
      tables.seals.set(seal.run, {
        outcome: seal.outcome,
        chainHead: head.hash,
        logPosition: sequence(tenant, seal.run, seal.outcome, head),
        sealedAt: now,
      })
      // A seal without a conclusion record in this call (the sweeper's bare evidence runs, a run
      // written by an earlier call) indexes its outcome as `seal` does live: runsByOutcome then
      // follows the order of the seals.
      if (!concluded.some((c) => c.run === seal.run)) {
        lastOrdinal += 1
        tables.outcomes.set(seal.run, { outcome: seal.outcome, ordinal: lastOrdinal })
      }
    }
    return Either.right(records.length)
  }

  /**
   * `append` with its options (`AppendOptions`), checked in the SQL stores' order: an opening
   * append meets the halt, then the admission key, then an existing lease, before the batch's own
   * checks; a guarded one meets a stored cancellation request. A refused batch puts the lease back.
   */
  const appendWith = (
    tables: Tables,
    now: number,
    tenant: TenantId,
    run: RunId,
    epoch: number,
    batch: ReadonlyArray<Journal.Append>,
    options: AppendOptions | undefined,
  ): Either.Either<ReadonlyArray<Journal.Record>, AppendError | Halted | LeaseHeld | CancelPending> => {
    const pendingCancel = (): CancelPending | undefined => {
      const request = options?.guardCancel === true ? tables.cancels.get(run) : undefined
      return request === undefined
        ? undefined
        : new CancelPending({ run, actor: request.actor, reason: request.reason })
    }
    const open = options?.open
    if (open === undefined) {
      // The SQL stores find a sealed run or a stale epoch first, under the lease's lock.
      const refused = mustHold(tables, run, epoch) ?? pendingCancel()
      if (refused !== undefined) return Either.left(refused)
      return appendTo(tables, now, run, epoch, batch)
    }
    // An opening names the first epoch; the SQL stores refuse any other before reading anything.
    if (epoch !== 1) return Either.left(new Fenced({ run, held: epoch, current: 0 }))
    const halt = halts.get(tenant)
    if (Option.isSome(halt)) return Either.left(new Halted({ tenant, reason: halt.value }))
    const cancelled = pendingCancel()
    if (cancelled !== undefined) return Either.left(cancelled)
    for (const entry of batch) {
      if (entry.kind.kind !== "RunAdmitted" || entry.kind.idempotency_key === undefined) continue
      const holder = tables.admissions.get(entry.kind.idempotency_key)
      if (holder !== undefined)
        return Either.left(new DuplicateAdmission({ key: entry.kind.idempotency_key, run: holder.run }))
    }
    const held = tables.leases.get(run)
    if (held !== undefined)
      return Either.left(
        new LeaseHeld({
          run,
          owner: held.owner,
          epoch: held.epoch,
          remainingSecs: Math.max(0, held.expiresAt - now),
        }),
      )
    tables.leases.set(run, { owner: open.owner, epoch: 1, expiresAt: now + wholeTtl(open.ttlSecs) })
    const written = appendTo(tables, now, run, epoch, batch)
    if (Either.isLeft(written)) tables.leases.delete(run)
    return written
  }

  return JournalStore.of({
    append: (run, epoch, batch, alongside, options) =>
      atomicallyWith(run, batch, alongside, (tables, now, tenant) =>
        appendWith(tables, now, tenant, run, epoch, batch, options),
      ),

    acquire: (run, owner, ttlSecs) =>
      atomically(({ leases }, now) => {
        const held = leases.get(run)
        // Live while now < expiresAt; acquire claims and never renews, even for the same owner.
        if (held !== undefined && held.owner !== "" && now < held.expiresAt) {
          return Either.left(
            new LeaseHeld({
              run,
              owner: held.owner,
              epoch: held.epoch,
              remainingSecs: Math.max(0, held.expiresAt - now),
            }),
          )
        }
        const lease = { owner, epoch: (held?.epoch ?? 0) + 1, expiresAt: now + wholeTtl(ttlSecs) }
        leases.set(run, lease)
        return Either.right(toLease(run, lease))
      }),

    acquireMany: (runs, owner, ttlSecs) =>
      atomically(({ leases }, now) => {
        const granted: Array<Journal.Lease> = []
        for (const run of new Set(runs)) {
          const held = leases.get(run)
          // As `acquire`: live while now < expiresAt, and a live lease is never taken, even by its owner.
          if (held !== undefined && held.owner !== "" && now < held.expiresAt) continue
          const lease = { owner, epoch: (held?.epoch ?? 0) + 1, expiresAt: now + wholeTtl(ttlSecs) }
          leases.set(run, lease)
          granted.push(toLease(run, lease))
        }
        return Either.right(granted)
      }),

    renew: (run, owner, epoch, ttlSecs) =>
      atomically(({ leases }, now) => {
        const held = leases.get(run)
        // Only the exact live holder: an expired lease is not renewed, another may acquire it any moment.
        if (
          held === undefined ||
          held.owner === "" ||
          held.owner !== owner ||
          held.epoch !== epoch ||
          now >= held.expiresAt
        ) {
          return Either.left(new LeaseNotHeld({ run, epoch }))
        }
        const lease = { ...held, expiresAt: now + wholeTtl(ttlSecs) }
        leases.set(run, lease)
        return Either.right(toLease(run, lease))
      }),

    releaseLease: (run, epoch) =>
      atomically(({ leases }) => {
        // The epoch stays so the next acquire goes higher; a stale epoch or a repeat is a silent no-op.
        const held = leases.get(run)
        if (held !== undefined && held.epoch === epoch) leases.set(run, { ...held, owner: "" })
        return Either.void
      }),

    abandonedRuns: (limit) =>
      atomically(({ leases }, now) =>
        Either.right(
          [...leases.entries()]
            .filter(([, lease]) => lease.owner !== "" && lease.expiresAt <= now)
            .sort(([ra, a], [rb, b]) => a.expiresAt - b.expiresAt || compareText(ra, rb))
            .slice(0, clampLimit(limit))
            .map(([run]) => run),
        ),
      ),

    seal: (run, epoch, outcome, last, alongside, options) =>
      atomicallyWith(
        run,
        last ?? [],
        alongside,
        (tables, now, tenant): Either.Either<Digest.Digest, AppendError | CancelPending> => {
          // Same check as append: the head sealed here is the last one any holder wrote.
          const refused = mustHold(tables, run, epoch)
          if (refused !== undefined) return Either.left(refused)
          const request = options?.guardCancel === true ? tables.cancels.get(run) : undefined
          if (request !== undefined)
            return Either.left(new CancelPending({ run, actor: request.actor, reason: request.reason }))
          if (last !== undefined) {
            const appended = appendTo(tables, now, run, epoch, last)
            if (Either.isLeft(appended)) return Either.left(appended.left)
          }
          const head = headOf(tables.journal.get(run) ?? [])
          const logPosition = sequence(tenant, run, outcome, head)
          tables.seals.set(run, { outcome, chainHead: head.hash, logPosition, sealedAt: now })
          // A bare seal (no conclusion record of its own) still indexes its outcome.
          if (!(last ?? []).some((a) => a.kind.kind === "RunSealed")) {
            lastOrdinal += 1
            tables.outcomes.set(run, { outcome, ordinal: lastOrdinal })
          }
          // The seal releases the lease it sealed under, as `releaseLease` would (see the contract).
          const held = tables.leases.get(run)
          if (held !== undefined && held.epoch === epoch) tables.leases.set(run, { ...held, owner: "" })
          return Either.right(head.hash)
        },
      ),

    read: (run, from) =>
      atomically(({ journal }) =>
        Either.all(
          (journal.get(run) ?? []).filter((row) => row.seq >= Math.floor(from)).map((row) => toRecord(run, row)),
        ),
      ),

    viewRecords: (run) =>
      atomically(({ journal }) =>
        Either.map(Either.all((journal.get(run) ?? []).map((row) => toRecord(run, row))), ViewRecords.select),
      ),

    head: (run) => atomically(({ journal }) => Either.right(headOf(journal.get(run) ?? []))),

    runsByOutcome: (outcome, limit) =>
      atomically(({ outcomes }) =>
        Either.right(
          [...outcomes.entries()]
            .filter(([, o]) => o.outcome === outcome)
            .sort(([ra, a], [rb, b]) => b.ordinal - a.ordinal || compareText(rb, ra))
            .slice(0, clampLimit(limit))
            .map(([run]) => run),
        ),
      ),

    admittedAs: (key) =>
      atomically(({ admissions }) => Either.right(Option.map(Option.fromNullable(admissions.get(key)), (a) => a.run))),

    forgetAdmissions: (olderThan) =>
      atomically(({ admissions }) => {
        // Inclusive: a key admitted exactly at `olderThan` is freed.
        let freed = 0
        for (const [key, admission] of admissions) {
          if (admission.admittedAt <= olderThan) {
            admissions.delete(key)
            freed += 1
          }
        }
        return Either.right(freed)
      }),

    recentRuns: (after, limit) =>
      atomically(({ activity }) =>
        Either.right(
          [...activity.entries()]
            .map(([run, a]): Journal.RecentRun => ({ run, updatedAt: Timestamp.make(a.updatedAt), case: a.case }))
            // Strictly after the cursor in (updatedAt desc, run desc): the order is total, so pages neither overlap nor skip.
            .filter((r) =>
              Option.match(after, {
                onNone: () => true,
                onSome: (c) =>
                  r.updatedAt < c.updatedAt || (r.updatedAt === c.updatedAt && compareText(r.run, c.run) < 0),
              }),
            )
            .sort((a, b) => b.updatedAt - a.updatedAt || compareText(b.run, a.run))
            .slice(0, clampLimit(limit)),
        ),
      ),

    caseHistory: (kase, limit) =>
      atomically(({ journal }) => {
        // Run ids are time-ordered, so (run, seq) is oldest first.
        const stamped = [...journal.entries()]
          .sort(([a], [b]) => compareText(a, b))
          .flatMap(([run, chain]) =>
            chain.filter((row) => Option.contains(row.case, kase)).map((row) => ({ run, row })),
          )
          .slice(0, clampLimit(limit))
        return Either.all(stamped.map(({ run, row }) => toRecord(run, row)))
      }),

    requestCancel: (run, actor, reason) =>
      atomically(({ cancels }, now) => {
        // The first request wins; a later one changes nothing and reports false.
        if (cancels.has(run)) return Either.right(false)
        cancels.set(run, { actor, reason, requestedAt: now })
        return Either.right(true)
      }),

    cancellation: (run) =>
      atomically(({ cancels }) =>
        Either.right(
          Option.map(
            Option.fromNullable(cancels.get(run)),
            (c): Journal.Cancellation => ({ actor: c.actor, reason: c.reason }),
          ),
        ),
      ),

    verify: (run) =>
      atomically(({ journal }) => {
        let head: Journal.Head = { seq: 0, hash: Digest.ZERO }
        for (const row of journal.get(run) ?? []) {
          const expected = head.seq + 1
          if (row.seq !== expected) {
            return Either.left(new Corrupt({ detail: `journal: seq ${expected} is missing`, seq: expected }))
          }
          const record = toRecord(run, row)
          if (Either.isLeft(record)) return record
          if (record.right.prevHash !== head.hash) {
            return Either.left(
              new Corrupt({ detail: "journal: prev_hash does not match the predecessor", seq: row.seq }),
            )
          }
          // Recomputed from the stored bytes, never from a re-serialisation of the decoded record.
          if (Digest.chain(head.hash, row.raw) !== record.right.hash) {
            return Either.left(new Corrupt({ detail: "journal: hash does not match the stored bytes", seq: row.seq }))
          }
          head = { seq: row.seq, hash: record.right.hash }
        }
        return Either.right(head)
      }),

    runs: (after, limit) =>
      atomically(({ journal }) =>
        Either.right(
          [...journal.keys()]
            .filter((run) => Option.match(after, { onNone: () => true, onSome: (a) => compareText(run, a) > 0 }))
            .sort(compareText)
            .slice(0, clampLimit(limit)),
        ),
      ),

    readPage: (run, from, limit) =>
      atomically(({ journal }) =>
        Either.all(
          (journal.get(run) ?? [])
            .filter((row) => row.seq >= Math.floor(from))
            .slice(0, clampLimit(limit))
            .map((row) => toRecord(run, row)),
        ),
      ),

    importRecords: (records, seals) =>
      atomically((tables, now, tenant) => importTo(tables, now, tenant, records, seals)),
  })
}

/** A JournalStore in process memory, empty each time the layer is built. */
export const layer: Layer.Layer<JournalStore> = Layer.effect(JournalStore, make())
