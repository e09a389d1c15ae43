/**
 * The runtime's own effect kinds (§7.5): the clock, randomness and the case, each journaled like
 * any declared effect so a replay reads them back instead of asking the world again.
 *
 * Store failures become `Transient`: a failed read surely did not happen; a failed write may have
 * committed before the connection dropped, so it is in doubt and its Recovery decides.
 */
import { Clock, Effect, Option, Random, Schema } from "effect"
import { Calendar } from "../domain/Calendar.js"
import * as Canonical from "../domain/Canonical.js"
import { CaseStatus } from "../domain/Case.js"
import { DeadlineSpec, DeadlineState } from "../domain/Deadline.js"
import { Digest } from "../domain/Digest.js"
import { CaseId, CaseVersion } from "../domain/Ids.js"
import { Json } from "../domain/Json.js"
import * as Run from "../domain/Run.js"
import { Timestamp } from "../domain/Time.js"
import { CaseConflict, NotFound, ObligationsOutstanding } from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import * as EffectKind from "./EffectKind.js"

const reads = new Run.RetryPolicy({ maxAttempts: 3, backoffMs: 50 })

const lost = (disposition: "did_not_happen" | "in_doubt") => (e: { readonly message: string }) =>
  new EffectKind.Transient({ message: e.message, disposition })

const Empty = Schema.Struct({})

export const clockNow = EffectKind.make({
  kind: "clock.now",
  args: Empty,
  success: Timestamp,
  mutates: false,
  act: () => Effect.map(Clock.currentTimeMillis, (ms) => Timestamp.make(Math.floor(ms / 1000))),
})

export const randomNext = EffectKind.make({
  kind: "random.next",
  args: Empty,
  success: Schema.Number,
  mutates: false,
  act: () => Random.next,
})

export const readState = EffectKind.make({
  kind: "case.read_state",
  args: Schema.Struct({ case: CaseId }),
  success: Schema.Struct({ state: Json, version: CaseVersion }),
  mutates: false,
  retry: reads,
  act: ({ case: id }) =>
    Effect.flatMap(CaseStore, (cases) => cases.case(id)).pipe(
      Effect.mapError(lost("did_not_happen")),
      Effect.flatMap(
        Option.match({
          onNone: () => Effect.dieMessage(`case ${id} vanished under its run`),
          onSome: (c) => Effect.succeed({ state: c.state, version: c.version }),
        }),
      ),
    ),
})

const WriteArgs = Schema.Struct({ case: CaseId, expected: CaseVersion, state: Json })

export const writeState = EffectKind.make({
  kind: "case.write_state",
  args: WriteArgs,
  success: Schema.Struct({ version: CaseVersion }),
  error: CaseConflict,
  mutates: true,
  recovery: Run.Recovery.Reconcile(),
  act: ({ case: id, expected, state }) =>
    Effect.flatMap(CaseStore, (cases) => cases.putState(id, expected, state)).pipe(
      Effect.map((version) => ({ version })),
      Effect.catchTags({
        Backend: (e) => Effect.fail(lost("in_doubt")(e)),
        Corrupt: (e) => Effect.die(e),
        NotFound: (e) => Effect.die(e),
      }),
    ),
  // Landed when the case is one version on with exactly this state; untouched when still at
  // `expected`; anything else (another writer moved it) cannot be told apart, so it stays in doubt.
  probe: ({ case: id, expected, state }) =>
    Effect.flatMap(CaseStore, (cases) => cases.case(id)).pipe(
      Effect.mapError(lost("did_not_happen")),
      Effect.map(
        Option.match({
          onNone: () => EffectKind.Verdict.InDoubt({ detail: `case ${id} is gone` }),
          onSome: (c) =>
            c.version === expected + 1 && Canonical.text(c.state) === Canonical.text(state)
              ? EffectKind.Verdict.Landed({ output: { version: c.version } })
              : c.version === expected
                ? EffectKind.Verdict.DidNotHappen()
                : EffectKind.Verdict.InDoubt({ detail: `case ${id} moved to v${c.version}` }),
        }),
      ),
    ),
})

export const setStatus = EffectKind.make({
  kind: "case.set_status",
  args: Schema.Struct({ case: CaseId, status: CaseStatus }),
  success: Empty,
  error: ObligationsOutstanding,
  mutates: true,
  // Setting a status twice leaves it as once: safe to repeat.
  recovery: Run.Recovery.Retry(),
  retry: reads,
  act: ({ case: id, status }) =>
    Effect.flatMap(CaseStore, (cases) => cases.setStatus(id, status)).pipe(
      Effect.as({}),
      Effect.catchTags({
        Backend: (e) => Effect.fail(lost("in_doubt")(e)),
        Corrupt: (e) => Effect.die(e),
        NotFound: (e) => Effect.die(e),
      }),
    ),
})

export const resolveDeadline = EffectKind.make({
  kind: "deadline.resolve",
  args: Schema.Struct({ case: CaseId, from: Timestamp, spec: DeadlineSpec }),
  success: Schema.Struct({ at: Timestamp, calendar_digest: Digest }),
  mutates: false,
  act: ({ from, spec }) =>
    Effect.flatMap(Calendar, (calendar) =>
      Effect.map(calendar.resolve(from, spec), (at) => ({ at, calendar_digest: calendar.digest })),
    ).pipe(Effect.orDie),
})

export const transitionDeadline = EffectKind.make({
  kind: "case.transition_deadline",
  args: Schema.Struct({ case: CaseId, name: Schema.String, to: DeadlineState }),
  success: Schema.Struct({ from: DeadlineState }),
  error: NotFound,
  mutates: true,
  // Writing the same state again changes nothing; the prior state is learnt in the same act.
  recovery: Run.Recovery.Retry(),
  retry: reads,
  act: ({ case: id, name, to }) =>
    Effect.gen(function* () {
      const cases = yield* CaseStore
      const all = yield* cases.deadlines(id)
      const found = all.find((d) => d.name === name)
      if (found === undefined) return yield* new NotFound({ what: `${id}/${name}` })
      yield* cases.setDeadlineState(id, name, to)
      return { from: found.state }
    }).pipe(
      Effect.catchTags({
        Backend: (e) => Effect.fail(lost("in_doubt")(e)),
        Corrupt: (e) => Effect.die(e),
      }),
    ),
})
