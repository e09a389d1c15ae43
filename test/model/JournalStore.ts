/**
 * JournalStore commands (§6): three runs leased by two owners, appended to under epochs 1–3 with
 * notes, effect starts, keyed admissions and conclusions, sealed, cancelled and read back.
 *
 * Lease, activity and admission times come from each backend's own clock (§6.4), so answers that
 * carry them are checked against the wall clock on each side and compared without them: a
 * lease's `expiresAt`, `LeaseHeld.remainingSecs`, and the order of `recentRuns` (whose
 * `updatedAt` may fall in different seconds on the two sides). TTLs are long, so no lease lapses
 * during a sequence and `abandonedRuns` stays empty on both sides; lapsing needs a real wait and
 * is the conformance battery's to test.
 */
import { Effect, Exit, FastCheck as fc, Option } from "effect"
import * as Digest from "../../src/domain/Digest.js"
import { Epoch, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { Phase } from "../../src/domain/Phase.js"
import type { Tenant } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import { LeaseHeld } from "../../src/errors/StoreError.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface JournalLedger extends Model.Ledger {
  readonly pools: Domain.Pools
  /** The epoch of each run's latest acquire, which `held` names. */
  readonly epochs: Map<number, number>
}

const ledger = (): JournalLedger => ({ ...Model.ledger(), pools: Domain.pools(), epochs: new Map() })

// Two runs, and mostly the epoch the run was last acquired at, so appends and seals get through.
const runRef = Domain.ref(2)
const epoch = fc.oneof({ weight: 3, arbitrary: fc.constant("held" as const) }, fc.integer({ min: 1, max: 3 }))
const epochOf = (l: JournalLedger, r: number, e: number | "held") =>
  Epoch.make(e === "held" ? (l.epochs.get(r) ?? 1) : e)
const owner = fc.constantFrom("w1", "w2")
const ttl = fc.constantFrom(600, 3600)
const outcome = fc.constantFrom(...Journal.RunOutcome.literals)
const admissionKey = fc.constantFrom("k1", "k2")

/** What an entry carries, as printed: pool indexes, and a payload drawn from a few kinds. */
const entryArgs = fc.record({
  case: fc.option(Domain.ref(2), { nil: undefined }),
  step: fc.integer({ min: 0, max: 2 }),
  phase: fc.constantFrom(...Phase.literals),
  payload: fc.oneof(
    { weight: 4, arbitrary: fc.record({ note: fc.constantFrom("a", "b") }) },
    { weight: 3, arbitrary: fc.record({ started: Domain.ref(3) }) },
    { weight: 2, arbitrary: fc.record({ admitted: fc.option(admissionKey, { nil: undefined }) }) },
    { weight: 2, arbitrary: fc.record({ concluded: outcome }) },
    // One record past the 1 MiB limit now and then: the whole batch must be refused.
    { weight: 1, arbitrary: fc.constant({ oversized: true as const }) },
  ),
})
type EntryArgs = typeof entryArgs extends fc.Arbitrary<infer A> ? A : never

const kindOf = (p: EntryArgs["payload"]): Journal.Kind => {
  if ("note" in p) return { kind: "Note", text: p.note }
  if ("started" in p)
    return {
      kind: "EffectStarted",
      descriptor: { tool: "mail.send" },
      recovery: "retry",
      mutates: true,
      attempt: 1,
      backoff_ms: 0,
      outbound_label: "public",
    }
  if ("admitted" in p)
    return {
      kind: "RunAdmitted",
      capability: "refunds",
      input: { amount: 12 },
      input_label: "internal",
      policy_bundle: "bundle-1",
      canon: 1,
      ...(p.admitted === undefined ? {} : { idempotency_key: p.admitted }),
    }
  if ("concluded" in p) return { kind: "RunSealed", outcome: p.concluded, chain_head: Digest.ZERO }
  return { kind: "Note", text: "x".repeat(Journal.MAX_RECORD_BYTES) }
}

const entry = (l: JournalLedger, e: EntryArgs) =>
  Journal.Append.make({
    case: e.case === undefined ? Option.none() : Option.some(Domain.pick(l.pools.cases, e.case)),
    step: StepId.make(e.step),
    phase: e.phase,
    effectKey: "started" in e.payload ? Option.some(Domain.pick(l.pools.effects, e.payload.started)) : Option.none(),
    kind: kindOf(e.payload),
  })

/** The wall clock in whole seconds, which every backend's clock must agree with to a second. */
const wallClock = Effect.sync(() => Math.floor(Date.now() / 1000))

/**
 * Runs a lease verb, checks `expiresAt` (or `remainingSecs`) against the wall clock around it,
 * and answers without them: the sides read their clocks at different instants.
 */
const leaseVerb = <E>(ttlSecs: number, verb: Effect.Effect<Journal.Lease, E, Model.Stores | Tenant>) =>
  Effect.gen(function* () {
    const before = yield* wallClock
    const answer = yield* Effect.either(verb)
    const after = yield* wallClock
    if (answer._tag === "Right") {
      const { expiresAt, ...rest } = answer.right
      if (expiresAt < before + ttlSecs - 1 || expiresAt > after + ttlSecs + 1)
        return yield* Effect.dieMessage(`expiresAt ${expiresAt} is not now + ${ttlSecs} (now ${before}–${after})`)
      return rest
    }
    const e = answer.left
    if (e instanceof LeaseHeld) {
      // Every lease here was taken with at least this TTL and none has lapsed.
      if (e.remainingSecs < 1 || e.remainingSecs > 3600 + 1)
        return yield* Effect.dieMessage(`LeaseHeld.remainingSecs ${e.remainingSecs} is out of range`)
      return yield* Effect.fail(new LeaseHeld({ ...e, remainingSecs: 0 }))
    }
    return yield* Effect.fail(e)
  })

/**
 * The recent-activity index as a set: each side's own order must be (updatedAt desc, run desc),
 * its times recent, and paging by its own cursors must reassemble it exactly.
 */
const recentRuns = (pageSize: number) =>
  Effect.gen(function* () {
    const s = yield* JournalStore
    const now = yield* wallClock
    const all = yield* s.recentRuns(Option.none(), 100)
    for (const [i, r] of all.entries()) {
      const next = all[i + 1]
      if (r.updatedAt > now + 1 || r.updatedAt < now - 600)
        return yield* Effect.dieMessage(`recentRuns: updatedAt ${r.updatedAt} is not recent (now ${now})`)
      if (next !== undefined && (next.updatedAt > r.updatedAt || (next.updatedAt === r.updatedAt && next.run >= r.run)))
        return yield* Effect.dieMessage(`recentRuns: ${next.run} sorts after ${r.run}`)
    }
    const paged: Array<Journal.RecentRun> = []
    let after = Option.none<Journal.Cursor>()
    for (;;) {
      const page = yield* s.recentRuns(after, pageSize)
      const last = page.at(-1)
      if (last === undefined || paged.length > all.length) break
      paged.push(...page)
      after = Option.some({ updatedAt: last.updatedAt, run: last.run })
    }
    if (paged.map((r) => r.run).join() !== all.map((r) => r.run).join())
      return yield* Effect.dieMessage(`recentRuns: pages of ${pageSize} do not reassemble the list`)
    return [...all].map((r) => ({ run: r.run, case: r.case })).sort((a, b) => (a.run < b.run ? -1 : 1))
  })

const command = Model.commandFor<JournalLedger>()
const store = JournalStore
const run = (l: JournalLedger, r: number) => Domain.pick(l.pools.runs, r)

const append = command(
  fc.tuple(runRef, epoch, fc.array(entryArgs, { minLength: 1, maxLength: 3 })),
  ([r, e, batch]) => ({
    show: Model.show("append", `run#${r}`, e, batch),
    run: (l) =>
      Effect.flatMap(store, (s) => {
        const [first, ...rest] = batch.map((b) => entry(l, b))
        return first === undefined
          ? Effect.dieMessage("empty batch")
          : s.append(run(l, r), epochOf(l, r, e), [first, ...rest])
      }),
  }),
)

const acquire = command(fc.tuple(runRef, owner, ttl), ([r, o, t]) => ({
  show: Model.show("acquire", `run#${r}`, o, t),
  run: (l) =>
    leaseVerb(
      t,
      Effect.flatMap(store, (s) => s.acquire(run(l, r), o, t)),
    ),
  learn: (l, model) => {
    if (Exit.isSuccess(model)) l.epochs.set(r, (model.value as { epoch: number }).epoch)
  },
}))

const commands = [
  // Appends and acquires are drawn more often: every other verb reads what they leave.
  ...Model.times(3, append),
  ...Model.times(2, acquire),
  command(fc.tuple(runRef, owner, epoch, ttl), ([r, o, e, t]) => ({
    show: Model.show("renew", `run#${r}`, o, e, t),
    run: (l) =>
      leaseVerb(
        t,
        Effect.flatMap(store, (s) => s.renew(run(l, r), o, epochOf(l, r, e), t)),
      ),
  })),
  command(fc.tuple(runRef, epoch), ([r, e]) => ({
    show: Model.show("releaseLease", `run#${r}`, e),
    run: (l) => Effect.flatMap(store, (s) => s.releaseLease(run(l, r), epochOf(l, r, e))),
  })),
  command(Domain.limit, (limit) => ({
    show: Model.show("abandonedRuns", limit),
    run: () => Effect.flatMap(store, (s) => s.abandonedRuns(limit)),
  })),
  command(fc.tuple(runRef, epoch, outcome), ([r, e, o]) => ({
    show: Model.show("seal", `run#${r}`, e, o),
    run: (l) => Effect.flatMap(store, (s) => s.seal(run(l, r), epochOf(l, r, e), o)),
  })),
  command(fc.tuple(runRef, fc.integer({ min: 0, max: 4 })), ([r, from]) => ({
    show: Model.show("read", `run#${r}`, from),
    run: (l) => Effect.flatMap(store, (s) => s.read(run(l, r), from)),
  })),
  command(runRef, (r) => ({
    show: Model.show("head", `run#${r}`),
    run: (l) => Effect.flatMap(store, (s) => s.head(run(l, r))),
  })),
  command(fc.tuple(outcome, Domain.limit), ([o, limit]) => ({
    show: Model.show("runsByOutcome", o, limit),
    run: () => Effect.flatMap(store, (s) => s.runsByOutcome(o, limit)),
  })),
  command(admissionKey, (k) => ({
    show: Model.show("admittedAs", k),
    run: () => Effect.flatMap(store, (s) => s.admittedAs(k)),
  })),
  // Admission times are the backends' own clocks: only "before everything" and "after everything" are comparable.
  command(fc.constantFrom(0, 4_102_444_800), (olderThan) => ({
    show: Model.show("forgetAdmissions", olderThan),
    run: () => Effect.flatMap(store, (s) => s.forgetAdmissions(Timestamp.make(olderThan))),
  })),
  command(fc.integer({ min: 1, max: 3 }), (pageSize) => ({
    show: Model.show("recentRuns", `pages of ${pageSize}`),
    run: () => recentRuns(pageSize),
  })),
  command(fc.tuple(Domain.ref(2), Domain.limit), ([c, limit]) => ({
    show: Model.show("caseHistory", `case#${c}`, limit),
    run: (l) => Effect.flatMap(store, (s) => s.caseHistory(Domain.pick(l.pools.cases, c), limit)),
  })),
  command(fc.tuple(runRef, owner, fc.constantFrom("stop", "wrong")), ([r, actor, reason]) => ({
    show: Model.show("requestCancel", `run#${r}`, actor, reason),
    run: (l) => Effect.flatMap(store, (s) => s.requestCancel(run(l, r), actor, reason)),
  })),
  command(runRef, (r) => ({
    show: Model.show("cancellation", `run#${r}`),
    run: (l) => Effect.flatMap(store, (s) => s.cancellation(run(l, r))),
  })),
  command(runRef, (r) => ({
    show: Model.show("verify", `run#${r}`),
    run: (l) => Effect.flatMap(store, (s) => s.verify(run(l, r))),
  })),
]

export const model: Model.StoreModel<JournalLedger> = { name: "JournalStore", ledger, commands }
