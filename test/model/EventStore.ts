/**
 * EventStore commands (§5.2): events from two sources with three ids, two kinds and four keys;
 * waits of three runs on three effects; claims, matches (which elect a wait, kept until its unsubscribe),
 * acceptances, deliveries, sweeps and erasure among them.
 */
import { Effect, FastCheck as fc, Option } from "effect"
import { InboundEvent, Subscription } from "../../src/domain/Event.js"
import { StepId } from "../../src/domain/Ids.js"
import { Phase } from "../../src/domain/Phase.js"
import { EventStore } from "../../src/services/EventStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface EventLedger extends Model.Ledger {
  readonly pools: Domain.Pools
  /** Events and waits offered so far: later calls name them again (`event#i`, `wait#i`) far more often than chance would. */
  readonly events: Array<EventArgs>
  readonly waits: Array<SubArgs>
}

const ledger = (): EventLedger => ({ ...Model.ledger(), pools: Domain.pools(), events: [], waits: [] })

// Mostly one kind: a wait only takes events of its own kind.
const kind = fc.oneof({ weight: 3, arbitrary: fc.constant("reply") }, fc.constant("ack"))

// Mostly one or two keys: enough to overlap with a wait's, and now and then none or three.
const keys = fc.oneof({ weight: 4, arbitrary: fc.array(Domain.key, { minLength: 1, maxLength: 2 }) }, Domain.keys)

const eventArgs = fc.record({
  source: fc.constantFrom("mail", "hook"),
  id: fc.constantFrom("1", "～", "😀"),
  kind,
  correlation: keys,
  payload: Domain.json,
})
type EventArgs = typeof eventArgs extends fc.Arbitrary<infer A> ? A : never

/** A new event, or one offered before (falling back to the new one while there are fewer). */
const eventOrSeen = fc.record({ fresh: eventArgs, seen: fc.option(Domain.ref(3), { nil: undefined, freq: 2 }) })
type EventOrSeen = typeof eventOrSeen extends fc.Arbitrary<infer A> ? A : never
const showEvent = (e: EventOrSeen) => (e.seen === undefined ? e.fresh : `event#${e.seen}`)
const resolveEvent = (l: EventLedger, e: EventOrSeen): EventArgs =>
  (e.seen === undefined ? undefined : l.events[e.seen]) ?? e.fresh

const event = (e: EventArgs) => new InboundEvent({ ...e, correlation: Domain.toKeys(e.correlation) })

const subArgs = fc.record({
  run: Domain.ref(3),
  case: fc.option(Domain.ref(2), { nil: undefined }),
  effect: Domain.ref(3),
  step: fc.integer({ min: 0, max: 2 }),
  phase: fc.constantFrom(...Phase.literals),
  kind,
  correlation: keys,
})
type SubArgs = typeof subArgs extends fc.Arbitrary<infer A> ? A : never

const subOrSeen = fc.record({ fresh: subArgs, seen: fc.option(Domain.ref(3), { nil: undefined, freq: 2 }) })
type SubOrSeen = typeof subOrSeen extends fc.Arbitrary<infer A> ? A : never
const showSub = (w: SubOrSeen) => (w.seen === undefined ? w.fresh : `wait#${w.seen}`)
const resolveSub = (l: EventLedger, w: SubOrSeen): SubArgs =>
  (w.seen === undefined ? undefined : l.waits[w.seen]) ?? w.fresh

/** A run from the pool, or the run of a wait offered before: replies name runs that wait. */
const runOrWaiter = fc.record({ pool: Domain.ref(3), waiter: fc.option(Domain.ref(3), { nil: undefined, freq: 2 }) })
type RunOrWaiter = typeof runOrWaiter extends fc.Arbitrary<infer A> ? A : never
const showRun = (r: RunOrWaiter) => (r.waiter === undefined ? `run#${r.pool}` : `run of wait#${r.waiter}`)
const resolveRun = (l: EventLedger, r: RunOrWaiter): number =>
  (r.waiter === undefined ? undefined : l.waits[r.waiter]?.run) ?? r.pool

/** Remembers what a call offered, once both sides have seen it. */
const offered =
  <A>(list: (l: EventLedger) => Array<A>, value: (l: EventLedger) => A) =>
  (l: EventLedger) => {
    const v = value(l)
    if (!list(l).includes(v)) list(l).push(v)
  }

const subscription = (l: EventLedger, s: SubArgs) =>
  new Subscription({
    run: Domain.pick(l.pools.runs, s.run),
    case: s.case === undefined ? Option.none() : Option.some(Domain.pick(l.pools.cases, s.case)),
    effect: Domain.pick(l.pools.effects, s.effect),
    step: StepId.make(s.step),
    phase: s.phase,
    kind: s.kind,
    correlation: Domain.toKeys(s.correlation),
  })

const command = Model.commandFor<EventLedger>()
const store = EventStore

const commands = [
  command(fc.tuple(eventOrSeen, Domain.at), ([e, at]) => ({
    show: Model.show("buffer", showEvent(e), at),
    run: (l) => Effect.flatMap(store, (s) => s.buffer(event(resolveEvent(l, e)), at)),
    learn: offered(
      (l) => l.events,
      (l) => resolveEvent(l, e),
    ),
  })),
  command(fc.tuple(eventOrSeen, Domain.at), ([e, at]) => ({
    show: Model.show("accept", showEvent(e), at),
    run: (l) => Effect.flatMap(store, (s) => s.accept(event(resolveEvent(l, e)), at)),
    learn: offered(
      (l) => l.events,
      (l) => resolveEvent(l, e),
    ),
  })),
  command(eventOrSeen, (e) => ({
    show: Model.show("accepted", showEvent(e)),
    run: (l) =>
      Effect.flatMap(store, (s) => {
        const { source, id } = resolveEvent(l, e)
        return s.accepted(source, id)
      }),
  })),
  command(fc.tuple(subOrSeen, Domain.at), ([w, at]) => ({
    show: Model.show("subscribe", showSub(w), at),
    run: (l) => Effect.flatMap(store, (s) => s.subscribe(subscription(l, resolveSub(l, w)), at)),
    learn: offered(
      (l) => l.waits,
      (l) => resolveSub(l, w),
    ),
  })),
  command(fc.tuple(subOrSeen, Domain.at), ([w, at]) => ({
    show: Model.show("claimFor", showSub(w), at),
    run: (l) => Effect.flatMap(store, (s) => s.claimFor(subscription(l, resolveSub(l, w)), at)),
  })),
  command(fc.tuple(eventOrSeen, Domain.at), ([e, at]) => ({
    show: Model.show("matchWaiter", showEvent(e), at),
    run: (l) => Effect.flatMap(store, (s) => s.matchWaiter(event(resolveEvent(l, e)), at)),
  })),
  command(fc.tuple(runOrWaiter, eventOrSeen, Domain.at), ([r, e, at]) => ({
    show: Model.show("deliverTo", showRun(r), showEvent(e), at),
    run: (l) =>
      Effect.flatMap(store, (s) =>
        s.deliverTo(Domain.pick(l.pools.runs, resolveRun(l, r)), event(resolveEvent(l, e)), at),
      ),
    learn: offered(
      (l) => l.events,
      (l) => resolveEvent(l, e),
    ),
  })),
  // Mostly a wait offered before, so elected waits are unsubscribed, and re-registered, often
  // enough for the model to see what an election leaves behind (issue 16).
  command(fc.tuple(subOrSeen, Domain.at), ([w, at]) => ({
    show: Model.show("unsubscribe", showSub(w), at),
    run: (l) =>
      Effect.flatMap(store, (s) => {
        const sub = resolveSub(l, w)
        return s.unsubscribe(Domain.pick(l.pools.runs, sub.run), Domain.pick(l.pools.effects, sub.effect))
      }),
  })),
  command(fc.tuple(fc.constantFrom("mail", "hook"), fc.constantFrom("1", "～", "😀")), ([source, id]) => ({
    show: Model.show("erasePayload", source, id),
    run: () => Effect.flatMap(store, (s) => s.erasePayload(source, id)),
  })),
  command(fc.tuple(Domain.at, fc.constantFrom("", "late", "gone")), ([olderThan, reason]) => ({
    show: Model.show("sweepUnclaimed", olderThan, reason),
    run: () => Effect.flatMap(store, (s) => s.sweepUnclaimed(olderThan, reason)),
  })),
  command(Domain.limit, (limit) => ({
    show: Model.show("deadLetters", limit),
    run: () => Effect.flatMap(store, (s) => s.deadLetters(limit)),
  })),
  command(Domain.limit, (limit) => ({
    show: Model.show("waiting", limit),
    run: () => Effect.flatMap(store, (s) => s.waiting(limit)),
  })),
]

export const model: Model.StoreModel<EventLedger> = { name: "EventStore", ledger, commands }
