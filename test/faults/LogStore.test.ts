/**
 * Fault injection on LogStore integration, PostgreSQL only (the cut is a trigger that terminates
 * the backend; see test/support/Faults.ts): an integration killed at any of its writes (the size's
 * compare-and-set, the subtrees, the checkpoint, the commit) stores nothing, and the retry
 * integrates every leaf once, exactly as a healthy run does. The other backends are proven
 * beside this file: LogStoreSqlite.test.ts fails each write on SQLite with a raising trigger,
 * LogStoreKill.test.ts SIGKILLs a process integrating a SQLite file, round after round, and
 * LogStoreMemory.test.ts interrupts memory integrations at any point beside a second caller.
 */
import { randomBytes } from "node:crypto"
import { describe, layer } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { inject } from "vitest"
import { generateRunId, type RunId, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import * as LogKey from "../../src/domain/LogKey.js"
import * as SignedNote from "../../src/domain/SignedNote.js"
import { Timestamp } from "../../src/domain/Time.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { LogStore } from "../../src/services/LogStore.js"
import * as Faults from "../support/Faults.js"

const NOW = Timestamp.make(1_800_000_000)

const note = (text: string) =>
  Journal.Append.make({
    case: Option.none(),
    step: StepId.make(1),
    effectKey: Option.none(),
    kind: { kind: "Note", text },
  })

/** Seals each run after one record: what integration reads. */
const sealAll = (runs: ReadonlyArray<RunId>) =>
  Effect.flatMap(JournalStore, (store) =>
    Effect.forEach(runs, (run) =>
      Effect.gen(function* () {
        const lease = yield* store.acquire(run, "worker", 600)
        yield* store.append(run, lease.epoch, [note(`work of ${run}`)])
        return yield* store.seal(run, lease.epoch, "succeeded")
      }),
    ),
  )

/** What the log shows: the latest checkpoint's size and root, and the proofs of every run at it. */
const shown = (runs: ReadonlyArray<RunId>) =>
  Effect.gen(function* () {
    const log = yield* LogStore
    const latest = yield* log.checkpoint()
    const size = latest._tag === "Some" ? latest.value.size : 0
    const proofs = yield* Effect.forEach(runs, (run) => Effect.either(log.inclusionProof(run, size)))
    return { latest, proofs }
  })

const key = () =>
  Either.getOrThrow(LogKey.make("agentplane.faults", SignedNote.signer("agentplane.faults/log", randomBytes(32))))

const integration = (name: string, before: number, after: number, cuts: ReadonlyArray<Faults.Cut>) =>
  Faults.scenario(name, cuts, () => {
    const runs = Array.from({ length: before + after }, () => generateRunId())
    const extra = generateRunId()
    const k = key()
    return {
      // `before` runs sealed and integrated already, then `after` more sealed and waiting.
      setup: Effect.gen(function* () {
        const log = yield* LogStore
        yield* sealAll(runs.slice(0, before))
        if (before > 0) yield* log.integrate(k, NOW, before)
        yield* sealAll(runs.slice(before))
      }),
      run: () => Effect.flatMap(LogStore, (log) => log.integrate(k, NOW, 100)),
      observe: () => shown(runs),
      // Integrated once: nothing is left, and a new seal goes in at the next position.
      probe: () =>
        Effect.gen(function* () {
          const log = yield* LogStore
          yield* sealAll([extra])
          return {
            integrated: yield* log.integrate(k, NOW, 100),
            proof: yield* log.inclusionProof(extra, before + after + 1),
          }
        }),
      volatile: ["note"],
    }
  })

const scenarios = [
  integration("the first integration of three sealed runs", 0, 3, [
    Faults.before("log_tree", "INSERT"),
    Faults.after("log_tree", "INSERT"),
    Faults.before("log_node", "INSERT"),
    Faults.before("log_node", "INSERT", "NEW.level = 1"),
    Faults.after("log_node", "INSERT"),
    Faults.before("log_checkpoint", "INSERT"),
    Faults.atCommit("log_checkpoint", "INSERT"),
  ]),
  integration("a later integration of four more onto five", 5, 4, [
    Faults.before("log_tree", "UPDATE"),
    Faults.after("log_tree", "UPDATE"),
    Faults.before("log_node", "INSERT", "NEW.level = 2"),
    Faults.after("log_node", "INSERT"),
    Faults.before("log_checkpoint", "INSERT"),
    Faults.atCommit("log_checkpoint", "INSERT"),
  ]),
]

describe("faults: LogStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, scenarios)
  })
})
