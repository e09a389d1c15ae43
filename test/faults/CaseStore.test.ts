/**
 * Fault injection on the CaseStore's multi-statement writes, PostgreSQL only (the cut is a
 * trigger that terminates the backend; see test/support/Faults.ts): a case is never left
 * without its keys, a close never releases some keys only, an import lands whole or not at all.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import { Case } from "../../src/domain/Case.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import { Deadline } from "../../src/domain/Deadline.js"
import * as Digest from "../../src/domain/Digest.js"
import { generateCaseId, generateRunId } from "../../src/domain/Ids.js"
import * as Time from "../../src/domain/Time.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)
const keys = [CorrelationKey.make("a", "1"), CorrelationKey.make("b", "2"), CorrelationKey.make("c", "3")]

/** Each key on its own: which case holds it, if any. */
const holders = Effect.flatMap(CaseStore, (store) => Effect.forEach(keys, (k) => store.correlate([k])))
const everyCase = Effect.flatMap(CaseStore, (store) => store.cases(Option.none(), 10))

const scenarios = [
  Faults.scenario(
    "correlateOrOpen opening a case with three keys",
    [
      Faults.before("cases", "INSERT"),
      Faults.after("cases", "INSERT"),
      Faults.before("case_correlation", "INSERT"),
      Faults.before("case_correlation", "INSERT", "NEW.namespace = 'b'"),
      Faults.after("case_correlation", "INSERT"),
      Faults.atCommit("case_correlation", "INSERT"),
    ],
    () => ({
      setup: Effect.void,
      run: () => Effect.flatMap(CaseStore, (store) => store.correlateOrOpen("claim", keys, at(1_000))),
      observe: () => Effect.all([holders, everyCase]),
      probe: () => Effect.flatMap(CaseStore, (store) => store.correlateOrOpen("claim", keys.slice(2), at(2_000))),
    }),
  ),
  Faults.scenario(
    "close releasing three keys",
    [
      Faults.before("cases", "UPDATE"),
      Faults.after("cases", "UPDATE"),
      Faults.before("case_correlation", "UPDATE"),
      Faults.before("case_correlation", "UPDATE", "NEW.namespace = 'b'"),
      Faults.after("case_correlation", "UPDATE"),
      Faults.atCommit("case_correlation", "UPDATE"),
    ],
    () => ({
      setup: Effect.flatMap(CaseStore, (store) => store.correlateOrOpen("claim", keys, at(1_000))),
      run: (opened) => Effect.flatMap(CaseStore, (store) => store.close(opened.case)),
      observe: () => Effect.all([holders, everyCase]),
      probe: () => Effect.flatMap(CaseStore, (store) => store.correlateOrOpen("claim", keys, at(2_000))),
    }),
  ),
  Faults.scenario(
    "importCase writing a case with keys, runs, deadlines and blobs",
    [
      Faults.before("cases", "INSERT"),
      Faults.after("cases", "INSERT"),
      Faults.after("case_correlation", "INSERT"),
      Faults.after("case_runs", "INSERT"),
      Faults.before("case_deadlines", "INSERT", "NEW.name = 'second'"),
      Faults.after("case_deadlines", "INSERT"),
      Faults.after("case_blobs", "INSERT"),
      Faults.atCommit("case_blobs", "INSERT"),
    ],
    () => {
      const id = generateCaseId()
      const kase = new Case({
        id,
        kind: "claim",
        status: "open",
        correlation: keys,
        state: { step: 2 },
        version: 4 as Case["version"],
        openedAt: at(1_000),
        runs: [generateRunId(), generateRunId()],
      })
      const deadline = (name: string, resolvedAt: number) =>
        new Deadline({
          case: id,
          name,
          resolvedAt: at(resolvedAt),
          calendarDigest: Digest.of("calendar"),
          warnAt: Option.none(),
          state: "pending",
        })
      const deadlines = [deadline("first", 5_000), deadline("second", 6_000)]
      const blobs = [Digest.of("one"), Digest.of("two")]
      return {
        setup: Effect.void,
        run: () => Effect.flatMap(CaseStore, (store) => store.importCase(kase, deadlines, blobs)),
        observe: () =>
          Effect.flatMap(CaseStore, (store) =>
            Effect.all([store.case(id), store.deadlines(id), store.blobsOf(id), holders, store.due(at(9_000), 10)]),
          ),
      }
    },
  ),
  Faults.scenario(
    "attachRun adding a run to a case",
    [Faults.before("case_runs", "INSERT"), Faults.after("case_runs", "INSERT"), Faults.atCommit("case_runs", "INSERT")],
    () => {
      const run = generateRunId()
      return {
        setup: Effect.flatMap(CaseStore, (store) => store.correlateOrOpen("claim", keys, at(1_000))),
        run: (opened) => Effect.flatMap(CaseStore, (store) => store.attachRun(opened.case, run)),
        observe: () => everyCase,
      }
    },
  ),
]

describe("faults: CaseStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, scenarios)
  })
})
