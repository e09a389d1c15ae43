/**
 * TimerStore commands (§5.3): timers of three runs on three effects, armed, claimed by sweeps
 * at instants a few 60 s leases apart, and disarmed. In printed records, `run`, `case` and
 * `effect` are indexes into the sequence's pools.
 */
import { Effect, FastCheck as fc, Option } from "effect"
import { StepId } from "../../src/domain/Ids.js"
import { Phase } from "../../src/domain/Phase.js"
import { Timer } from "../../src/domain/Timer.js"
import { TimerStore } from "../../src/services/TimerStore.js"
import * as Model from "../support/Model.js"
import * as Domain from "./Domain.js"

export interface TimerLedger extends Model.Ledger {
  readonly pools: Domain.Pools
}

const ledger = (): TimerLedger => ({ ...Model.ledger(), pools: Domain.pools() })

const timerArgs = fc.record({
  run: Domain.ref(3),
  case: fc.option(Domain.ref(2), { nil: undefined }),
  effect: Domain.ref(3),
  step: fc.integer({ min: 0, max: 2 }),
  phase: fc.constantFrom(...Phase.literals),
  fireAt: Domain.at,
})
type TimerArgs = typeof timerArgs extends fc.Arbitrary<infer A> ? A : never

const timer = (l: TimerLedger, t: TimerArgs) =>
  new Timer({
    run: Domain.pick(l.pools.runs, t.run),
    case: t.case === undefined ? Option.none() : Option.some(Domain.pick(l.pools.cases, t.case)),
    effect: Domain.pick(l.pools.effects, t.effect),
    step: StepId.make(t.step),
    phase: t.phase,
    fireAt: t.fireAt,
  })

const command = Model.commandFor<TimerLedger>()
const store = TimerStore

const commands = [
  command(timerArgs, (t) => ({
    show: Model.show("arm", t),
    run: (l) => Effect.flatMap(store, (s) => s.arm(timer(l, t))),
  })),
  command(fc.tuple(Domain.at, Domain.limit), ([now, limit]) => ({
    show: Model.show("claimDue", now, limit),
    run: () => Effect.flatMap(store, (s) => s.claimDue(now, limit)),
  })),
  command(fc.tuple(Domain.ref(3), Domain.ref(3)), ([run, effect]) => ({
    show: Model.show("disarm", `run#${run}`, `effect#${effect}`),
    run: (l) =>
      Effect.flatMap(store, (s) => s.disarm(Domain.pick(l.pools.runs, run), Domain.pick(l.pools.effects, effect))),
  })),
  command(fc.constant(null), () => ({
    show: Model.show("pendingCount"),
    run: () => Effect.flatMap(store, (s) => s.pendingCount()),
  })),
  command(Domain.limit, (limit) => ({
    show: Model.show("pending", limit),
    run: () => Effect.flatMap(store, (s) => s.pending(limit)),
  })),
]

export const model: Model.StoreModel<TimerLedger> = { name: "TimerStore", ledger, commands }
