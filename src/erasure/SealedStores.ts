/**
 * "Payloads, not structure" (§9.1) as a decoration of the stores: with a key ring configured,
 * the payload fields of what is written are sealed before the store sees them and opened on the
 * way back. The runtime is unchanged, and since the journal computes `raw` and the hash from the
 * record it is given, the chain commits to the ciphertext: destroying a key erases the content
 * from every copy, and every chain still verifies.
 *
 * Sealed, under the case's scope (the run's when the record or task has no case):
 * - journal: the admitted input, frozen plans, notes, error texts (an effect's error, a seal's
 *   reason, a reconciliation's detail), and the arguments (descriptor) and outputs of effects;
 * - case state (`putState`), opened by `case`, `cases` and `byStatus`;
 * - a task's justification (summary, proposed action, cost, evidence);
 * and a buffered event's payload under `event/<source>/<id>`, opened by `accept`'s duplicate,
 * `accepted`, `claimFor` and `deadLetters` (an erased payload, `null`, stays `null`).
 * Structure stays in the clear: ids, kinds, steps, keys, outcomes, deadlines, hashes.
 *
 * Decisions: `importCase` and `importRecords` write what they are given verbatim (a restore
 * brings ciphertext and must not seal it twice). `readPage` opens like `read`; the archive uses
 * only `raw` and the hashes, and the CLI's export reads the undecorated stores, so it never
 * decrypts (§9.2). `verify`, `head` and every index pass through untouched. A record's 1 MiB
 * limit counts the sealed body, about 4/3 of the plain one (base64). A value is opened only under
 * the scope of the place it was read from. Sealed data restored into another tenant does not
 * open there: keys and boxes are bound to the tenant, and moving keys is not built.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Case } from "../domain/Case.js"
import { Case as CaseClass } from "../domain/Case.js"
import { BufferedEvent, DeadLetter, InboundEvent } from "../domain/Event.js"
import type { RunId } from "../domain/Ids.js"
import * as Journal from "../domain/Journal.js"
import type { Json } from "../domain/Json.js"
import { Justification, Task } from "../domain/Task.js"
import type { Tenant } from "../domain/Tenant.js"
import { Backend, Corrupt } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import { Acceptance, EventStore } from "../services/EventStore.js"
import { JournalStore } from "../services/JournalStore.js"
import { KeyRing } from "../services/KeyRing.js"
import type { Stores } from "../services/Stores.js"
import { TaskStore } from "../services/TaskStore.js"
import * as Sealer from "./Sealer.js"

/** The payload fields of each record kind that are sealed; the others are structure. */
export const SEALED_FIELDS: { readonly [K in Journal.KindTag]?: ReadonlyArray<string> } = {
  RunAdmitted: ["input"],
  PlanFrozen: ["plan"],
  Note: ["text"],
  EffectStarted: ["descriptor"],
  EffectDone: ["output"],
  EffectFailed: ["error"],
  EffectReconciled: ["output", "detail"],
  RunSealed: ["reason"],
}

/** The stores of `context` with the journal, case and task stores sealing through `ring`; the others as they are. */
export const decorate =
  (ring: typeof KeyRing.Service) =>
  <S extends Stores>(context: Context.Context<S>): Context.Context<S> => {
    // A fresh sealer per verb, so key lookups are cached for one verb only.
    const sealer = () => Sealer.make(ring)
    return context.pipe(
      Context.add(JournalStore, journal(Context.get(context as Context.Context<Stores>, JournalStore), sealer)),
      Context.add(CaseStore, cases(Context.get(context as Context.Context<Stores>, CaseStore), sealer)),
      Context.add(TaskStore, tasks(Context.get(context as Context.Context<Stores>, TaskStore), sealer)),
      Context.add(EventStore, events(Context.get(context as Context.Context<Stores>, EventStore), sealer)),
    ) as Context.Context<S>
  }

/** `stores` with the journal, case and task stores sealing through the key ring. */
export const over = <E, R>(stores: Layer.Layer<Stores, E, R>): Layer.Layer<Stores, E, R | KeyRing> =>
  Layer.flatMap(stores, (context) => Layer.effectContext(Effect.map(KeyRing, (ring) => decorate(ring)(context))))

/** Runs `effect` with the stores it finds sealing through the key ring it finds. */
export const sealing = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Stores | KeyRing> =>
  Effect.gen(function* () {
    const ring = yield* KeyRing
    const context = yield* Effect.context<Stores>()
    return yield* Effect.provide(effect, decorate(ring)(context))
  }) as Effect.Effect<A, E, R | Stores | KeyRing>

/**
 * Opens the sealed payloads of records read elsewhere (an export's, for the replay gate) through
 * `ring`: each under its case's scope, as the journal's reads open them.
 */
export const openRecords = (ring: typeof KeyRing.Service) => {
  const s = Sealer.make(ring)
  return (records: ReadonlyArray<Journal.Record>) => openWith(s)(records)
}

// internal

type Via = (value: Json) => Effect.Effect<Json, Backend | Corrupt, Tenant>

type Batch = readonly [Journal.Append, ...ReadonlyArray<Journal.Append>]

const mapKind = (kind: Journal.Kind, via: Via) =>
  Effect.gen(function* () {
    const fields = SEALED_FIELDS[kind.kind]
    if (fields === undefined) return kind
    const next: { [field: string]: unknown } = { ...kind }
    for (const field of fields) {
      const value = next[field]
      if (value !== undefined) next[field] = yield* via(value as Json)
    }
    return next as Journal.Kind
  })

const openWith = (s: Sealer.Sealer) => (records: ReadonlyArray<Journal.Record>) =>
  Effect.forEach(records, (record) =>
    mapKind(record.kind, s.open(scopeOfPosition(record.run, record.case))).pipe(
      // A payload that does not open is damage at that record: name its seq.
      Effect.mapError((e) => (e._tag === "Corrupt" ? new Corrupt({ detail: e.detail, seq: record.seq }) : e)),
      Effect.map((kind) => new Journal.Record({ ...record, kind })),
    ),
  )

const scopeOfPosition = (run: RunId, kase: Option.Option<string>) => Option.getOrElse(kase, () => run as string)

const journal = (inner: typeof JournalStore.Service, sealer: () => Sealer.Sealer): typeof JournalStore.Service => {
  const sealBatch = (s: Sealer.Sealer, run: RunId, batch: Batch) =>
    Effect.forEach(
      batch,
      (entry) =>
        Effect.map(
          mapKind(entry.kind, (v) => s.seal(scopeOfPosition(run, entry.case), v)),
          (kind) => new Journal.Append({ ...entry, kind }),
        ),
      // forEach keeps the length, so a non-empty batch stays non-empty.
    ).pipe(Effect.map((sealed) => sealed as unknown as Batch))
  const openRecords = openWith
  return {
    ...inner,
    append: (run, epoch, batch, alongside, options) =>
      Effect.suspend(() => {
        const s = sealer()
        return Effect.flatMap(sealBatch(s, run, batch), (sealed) =>
          inner.append(run, epoch, sealed, alongside, options),
        ).pipe(Effect.flatMap(openRecords(s)))
      }),
    seal: (run, epoch, outcome, last, alongside, options) =>
      last === undefined
        ? inner.seal(run, epoch, outcome, undefined, alongside, options)
        : Effect.suspend(() =>
            Effect.flatMap(sealBatch(sealer(), run, last), (sealed) =>
              inner.seal(run, epoch, outcome, sealed, alongside, options),
            ),
          ),
    read: (run, from) => Effect.flatMap(inner.read(run, from), (records) => openRecords(sealer())(records)),
    // Opened like `read`: the archive uses only `raw` and the hashes, which are the stored ones.
    readPage: (run, from, limit) =>
      Effect.flatMap(inner.readPage(run, from, limit), (records) => openRecords(sealer())(records)),
    caseHistory: (kase, limit) =>
      Effect.flatMap(inner.caseHistory(kase, limit), (records) => openRecords(sealer())(records)),
    // The inner store chooses the records by what sealing leaves in the clear (`ViewRecords`).
    viewRecords: (run) => Effect.flatMap(inner.viewRecords(run), (records) => openRecords(sealer())(records)),
  }
}

const cases = (inner: typeof CaseStore.Service, sealer: () => Sealer.Sealer): typeof CaseStore.Service => {
  const openCase = (s: Sealer.Sealer) => (kase: Case) =>
    Effect.map(s.open(kase.id)(kase.state), (state) => new CaseClass({ ...kase, state }))
  return {
    ...inner,
    case: (id) =>
      Effect.flatMap(
        inner.case(id),
        Option.match({ onNone: () => Effect.succeedNone, onSome: (c) => Effect.asSome(openCase(sealer())(c)) }),
      ),
    cases: (after, limit) =>
      Effect.flatMap(inner.cases(after, limit), (all) => Effect.forEach(all, openCase(sealer()))),
    byStatus: (status, limit) =>
      Effect.flatMap(inner.byStatus(status, limit), (all) => Effect.forEach(all, openCase(sealer()))),
    putState: (kase, expected, state) =>
      Effect.suspend(() =>
        Effect.flatMap(sealer().seal(kase, state), (sealed) => inner.putState(kase, expected, sealed)),
      ),
  }
}

const tasks = (inner: typeof TaskStore.Service, sealer: () => Sealer.Sealer): typeof TaskStore.Service => {
  const mapTask = (task: Task, via: Via) =>
    Effect.gen(function* () {
      const j = task.justification
      const summary = yield* via(j.summary)
      const proposedAction = yield* via(j.proposedAction)
      const evidence = yield* Effect.forEach(j.evidence, via)
      // A cost is money, often a customer's: sealed like the rest, so erasing the case reaches it.
      const cost = yield* Effect.forEach(Option.toArray(j.cost), via)
      const justification = new Justification({
        ...j,
        summary: summary as string,
        proposedAction,
        cost: Option.fromNullable(cost[0] as string | undefined),
        evidence: evidence as ReadonlyArray<string>,
      })
      return new Task({ ...task, justification })
    })
  const scope = (task: Task) => scopeOfPosition(task.run, task.case)
  const openTask = (task: Task) => mapTask(task, sealer().open(scope(task)))
  const openAll = (all: ReadonlyArray<Task>) => {
    const s = sealer()
    return Effect.forEach(all, (task) => mapTask(task, s.open(scope(task))))
  }
  return {
    ...inner,
    open: (task) =>
      Effect.suspend(() => {
        const s = sealer()
        return Effect.flatMap(
          mapTask(task, (v) => s.seal(scope(task), v)),
          (sealed) => Effect.flatMap(inner.open(sealed), (stored) => mapTask(stored, s.open(scope(stored)))),
        )
      }),
    task: (id) =>
      Effect.flatMap(
        inner.task(id),
        Option.match({ onNone: () => Effect.succeedNone, onSome: (t) => Effect.asSome(openTask(t)) }),
      ),
    claim: (id, actor, roles) => Effect.flatMap(inner.claim(id, actor, roles), openTask),
    takeOver: (id, from, actor, roles) => Effect.flatMap(inner.takeOver(id, from, actor, roles), openTask),
    escalate: (id) => Effect.flatMap(inner.escalate(id), openTask),
    queue: (roles, limit) => Effect.flatMap(inner.queue(roles, limit), openAll),
    forCase: (kase) => Effect.flatMap(inner.forCase(kase), openAll),
    overdue: (now, limit) => Effect.flatMap(inner.overdue(now, limit), openAll),
  }
}

const events = (inner: typeof EventStore.Service, sealer: () => Sealer.Sealer): typeof EventStore.Service => {
  const scope = (event: InboundEvent) => `event/${event.source}/${event.id}`
  const sealEvent = (event: InboundEvent) =>
    Effect.suspend(() =>
      Effect.map(sealer().seal(scope(event), event.payload), (payload) => new InboundEvent({ ...event, payload })),
    )
  const openEvent = (event: InboundEvent) =>
    Effect.map(sealer().open(scope(event))(event.payload), (payload) => new InboundEvent({ ...event, payload }))
  const openBuffered = (b: BufferedEvent) =>
    Effect.map(openEvent(b.event), (event) => new BufferedEvent({ ...b, event }))
  return {
    ...inner,
    // `buffer` declares no `Corrupt`: a key ring that cannot answer is a backend failure here.
    buffer: (event, at) =>
      Effect.flatMap(sealEvent(event), (sealed) => inner.buffer(sealed, at)).pipe(
        Effect.catchTag("Corrupt", (e) => Effect.fail(new Backend({ detail: `backend: ${e.message}` }))),
      ),
    accept: (event, at) =>
      Effect.flatMap(sealEvent(event), (sealed) => inner.accept(sealed, at)).pipe(
        Effect.flatMap(
          (acceptance): Effect.Effect<Acceptance, Backend | Corrupt, Tenant> =>
            acceptance._tag === "Duplicate"
              ? Effect.map(openBuffered(acceptance.stored), (stored) => Acceptance.Duplicate({ stored }))
              : Effect.succeed(acceptance),
        ),
      ),
    accepted: (source, id) =>
      Effect.flatMap(
        inner.accepted(source, id),
        Option.match({ onNone: () => Effect.succeedNone, onSome: (b) => Effect.asSome(openBuffered(b)) }),
      ),
    claimFor: (sub, at) =>
      Effect.flatMap(
        inner.claimFor(sub, at),
        Option.match({ onNone: () => Effect.succeedNone, onSome: (b) => Effect.asSome(openBuffered(b)) }),
      ),
    matchWaiter: (event, at) => Effect.flatMap(sealEvent(event), (sealed) => inner.matchWaiter(sealed, at)),
    deliverTo: (run, event, at) => Effect.flatMap(sealEvent(event), (sealed) => inner.deliverTo(run, sealed, at)),
    deadLetters: (limit) =>
      Effect.flatMap(inner.deadLetters(limit), (all) =>
        Effect.forEach(all, (d) => Effect.map(openEvent(d.event), (event) => new DeadLetter({ ...d, event }))),
      ),
  }
}
