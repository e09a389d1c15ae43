/**
 * CaseStore commands (§5.1): every method over four keys, a handful of cases and three runs.
 * Cases opened by `correlateOrOpen` get a different id on each side; the ledger pairs them.
 */
import { Effect, Exit, FastCheck as fc, Option } from "effect"
import { Case, CaseStatus } from "../../src/domain/Case.js"
import { Deadline, DeadlineState } from "../../src/domain/Deadline.js"
import * as Digest from "../../src/domain/Digest.js"
import { type CaseId, CaseVersion, generateCaseId } from "../../src/domain/Ids.js"
import type * as Time from "../../src/domain/Time.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface CaseLedger extends Model.Ledger {
  readonly pools: Domain.Pools
  /** Cases known to exist on some tenant, as (model id, system id); `case#i` in a sequence. */
  readonly cases: Array<{ readonly model: CaseId; readonly system: CaseId }>
  /** Ids an import mints, one per slot, the same on both sides (`import#j`). */
  readonly imports: Map<number, CaseId>
  /** A case that never exists: refs past the known cases land here. */
  readonly phantom: CaseId
}

const ledger = (): CaseLedger => ({
  ...Model.ledger(),
  pools: Domain.pools(),
  cases: [],
  imports: new Map(),
  phantom: generateCaseId(),
})

/** `case#i` on `side`: the i-th known case, or the phantom past the end. */
const caseOf = (l: CaseLedger, side: Model.SideName, i: number): CaseId => l.cases[i]?.[side] ?? l.phantom

// Mostly the first cases, so calls meet each other; now and then one past them (the phantom).
const caseRef = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 2 }) }, fc.integer({ min: 3, max: 4 }))
const status = fc.constantFrom(...CaseStatus.literals)
const deadlineState = fc.constantFrom(...DeadlineState.literals)
const name = fc.constantFrom("reply", "pay", "file")
const calendar = Digest.of("agentplane.calendar.wallclock.v1")

const deadline = (kase: CaseId, d: DeadlineArgs): Deadline =>
  new Deadline({
    case: kase,
    name: d.name,
    resolvedAt: d.resolvedAt,
    calendarDigest: calendar,
    warnAt: Option.fromNullable(d.warnAt),
    state: d.state,
  })

const deadlineArgs = fc.record({
  name,
  resolvedAt: Domain.at,
  warnAt: fc.option(Domain.at, { nil: undefined }),
  state: deadlineState,
})
interface DeadlineArgs {
  readonly name: string
  readonly resolvedAt: Time.Timestamp
  readonly warnAt?: Time.Timestamp | undefined
  readonly state: DeadlineState
}

const remember = (l: CaseLedger, model: CaseId, system: CaseId) => {
  if (l.cases.some((c) => c.model === model)) return
  l.cases.push({ model, system })
  l.toModel.set(system, model)
}

const store = CaseStore
const command = Model.commandFor<CaseLedger>()

const correlateOrOpen = command(
  fc.tuple(fc.constantFrom("claim", "dispute"), Domain.keys, Domain.at),
  ([kind, keys, at]) => ({
    show: Model.show("correlateOrOpen", kind, keys, at),
    run: () => Effect.flatMap(store, (s) => s.correlateOrOpen(kind, Domain.toKeys(keys), at)),
    learn: (l, model, system) => {
      if (Exit.isSuccess(model) && Exit.isSuccess(system)) {
        const m = model.value as { _tag: string; case: CaseId }
        const s = system.value as { _tag: string; case: CaseId }
        if (m._tag === "Opened" && s._tag === "Opened") remember(l, m.case, s.case)
      }
    },
  }),
)

const commands = [
  // Opening is drawn three times as often as any other call: most verbs need a case.
  ...Model.times(3, correlateOrOpen),
  command(Domain.keys, (keys) => ({
    show: Model.show("correlate", keys),
    run: () => Effect.flatMap(store, (s) => s.correlate(Domain.toKeys(keys))),
  })),
  command(caseRef, (i) => ({
    show: Model.show("case", `case#${i}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.case(caseOf(l, side, i))),
  })),
  command(fc.tuple(fc.option(caseRef, { nil: undefined }), Domain.limit), ([after, limit]) => ({
    show: Model.show("cases", after === undefined ? "none" : `case#${after}`, limit),
    run: (l, side) =>
      Effect.flatMap(store, (s) =>
        s.cases(after === undefined ? Option.none() : Option.some(caseOf(l, side, after)), limit),
      ),
  })),
  command(
    fc.record({
      // Slots 0–1 mint an id (the second import into a slot meets an existing id); 2 names case#0.
      target: fc.integer({ min: 0, max: 2 }),
      kind: fc.constantFrom("claim", "dispute"),
      status,
      correlation: Domain.keySet,
      state: Domain.json,
      version: fc.integer({ min: 0, max: 3 }),
      openedAt: Domain.at,
      runs: fc.uniqueArray(Domain.ref(3), { maxLength: 3 }),
      deadlines: fc.uniqueArray(deadlineArgs, { maxLength: 2, selector: (d) => d.name }),
      blobs: fc.uniqueArray(Domain.ref(3), { maxLength: 3 }),
      // One import in five carries a flaw an export never has; it must be refused whole, never half-written.
      flaw: fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        fc.constantFrom("repeated key", "repeated run", "repeated deadline", "repeated blob", "foreign deadline"),
      ),
    }),
    (a) => ({
      show: Model.show("importCase", { ...a, target: a.target === 2 ? "case#0" : `import#${a.target}` }),
      run: (l, side) => {
        const id = a.target === 2 ? caseOf(l, side, 0) : importId(l, a.target)
        const twice = <A>(list: ReadonlyArray<A>, fallback: A, flaw: string) =>
          a.flaw === flaw ? [...list, list[0] ?? fallback, ...(list.length === 0 ? [fallback] : [])] : list
        const kase = new Case({
          id,
          kind: a.kind,
          status: a.status,
          correlation: Domain.toKeys(twice(a.correlation, "doc=1", "repeated key")),
          state: a.state,
          version: CaseVersion.make(a.version),
          openedAt: a.openedAt,
          runs: twice(a.runs, 0, "repeated run").map((r) => Domain.pick(l.pools.runs, r)),
        })
        const deadlines = twice(
          a.deadlines,
          { name: "pay", resolvedAt: a.openedAt, warnAt: undefined, state: "pending" as const },
          "repeated deadline",
        )
        return Effect.flatMap(store, (s) =>
          s.importCase(
            kase,
            [
              ...deadlines.map((d) => deadline(id, d)),
              ...(a.flaw === "foreign deadline"
                ? [deadline(l.phantom, { name: "file", resolvedAt: a.openedAt, state: "met" })]
                : []),
            ],
            twice(a.blobs, 0, "repeated blob").map((b) => Domain.pick(l.pools.digests, b)),
          ),
        )
      },
      learn: (l, model, system) => {
        if (a.target !== 2 && Exit.isSuccess(model) && Exit.isSuccess(system)) {
          const id = importId(l, a.target)
          remember(l, id, id)
        }
      },
    }),
  ),
  command(fc.tuple(caseRef, Domain.ref(3)), ([i, r]) => ({
    show: Model.show("attachRun", `case#${i}`, `run#${r}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.attachRun(caseOf(l, side, i), Domain.pick(l.pools.runs, r))),
  })),
  command(fc.tuple(caseRef, Domain.ref(3)), ([i, r]) => ({
    show: Model.show("detachRun", `case#${i}`, `run#${r}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.detachRun(caseOf(l, side, i), Domain.pick(l.pools.runs, r))),
  })),
  command(fc.tuple(caseRef, Domain.ref(3), Domain.at), ([i, d, at]) => ({
    show: Model.show("linkBlob", `case#${i}`, `digest#${d}`, at),
    run: (l, side) => Effect.flatMap(store, (s) => s.linkBlob(caseOf(l, side, i), Domain.pick(l.pools.digests, d), at)),
  })),
  command(caseRef, (i) => ({
    show: Model.show("blobsOf", `case#${i}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.blobsOf(caseOf(l, side, i))),
  })),
  command(fc.tuple(caseRef, fc.integer({ min: 0, max: 3 }), Domain.json), ([i, expected, state]) => ({
    show: Model.show("putState", `case#${i}`, expected, state),
    run: (l, side) => Effect.flatMap(store, (s) => s.putState(caseOf(l, side, i), CaseVersion.make(expected), state)),
  })),
  command(fc.tuple(caseRef, status), ([i, st]) => ({
    show: Model.show("setStatus", `case#${i}`, st),
    run: (l, side) => Effect.flatMap(store, (s) => s.setStatus(caseOf(l, side, i), st)),
  })),
  command(caseRef, (i) => ({
    show: Model.show("close", `case#${i}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.close(caseOf(l, side, i))),
  })),
  command(fc.tuple(caseRef, deadlineArgs), ([i, d]) => ({
    show: Model.show("registerDeadline", `case#${i}`, d),
    run: (l, side) => Effect.flatMap(store, (s) => s.registerDeadline(deadline(caseOf(l, side, i), d))),
  })),
  command(caseRef, (i) => ({
    show: Model.show("deadlines", `case#${i}`),
    run: (l, side) => Effect.flatMap(store, (s) => s.deadlines(caseOf(l, side, i))),
  })),
  command(fc.tuple(caseRef, name, deadlineState), ([i, n, st]) => ({
    show: Model.show("setDeadlineState", `case#${i}`, n, st),
    run: (l, side) => Effect.flatMap(store, (s) => s.setDeadlineState(caseOf(l, side, i), n, st)),
  })),
  command(fc.tuple(Domain.at, Domain.limit), ([now, limit]) => ({
    show: Model.show("due", now, limit),
    run: () => Effect.flatMap(store, (s) => s.due(now, limit)),
  })),
  command(Domain.limit, (limit) => ({
    show: Model.show("breached", limit),
    run: () => Effect.flatMap(store, (s) => s.breached(limit)),
  })),
  command(fc.tuple(status, Domain.limit), ([st, limit]) => ({
    show: Model.show("byStatus", st, limit),
    run: () => Effect.flatMap(store, (s) => s.byStatus(st, limit)),
  })),
  command(Domain.at, (now) => ({
    show: Model.show("census", now),
    run: () => Effect.flatMap(store, (s) => s.census(now)),
  })),
]

export const model: Model.StoreModel<CaseLedger> = { name: "CaseStore", ledger, commands }

// internal

/** The id of import slot `j`, minted on first use and then the same for both sides. */
const importId = (l: CaseLedger, j: number): CaseId => {
  const found = l.imports.get(j)
  if (found !== undefined) return found
  const id = generateCaseId()
  l.imports.set(j, id)
  return id
}
