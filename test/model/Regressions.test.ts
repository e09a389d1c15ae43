/**
 * The defects the model-based tests found, each pinned as the shrunk sequence that exposed it,
 * on every backend: memory, SQLite and PostgreSQL.
 */
import { randomBytes } from "node:crypto"
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import { Case } from "../../src/domain/Case.js"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Digest from "../../src/domain/Digest.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { CaseVersion, Epoch, generateCaseId, generateRunId, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { Justification, Task } from "../../src/domain/Task.js"
import { TaskId } from "../../src/domain/TaskId.js"
import { Timestamp } from "../../src/domain/Time.js"
import { NotPending, WrongRole } from "../../src/errors/ClaimError.js"
import { DuplicateEffect } from "../../src/errors/StoreError.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { assertError } from "../support/Errors.js"

const at = (s: number) => Timestamp.make(s)

const regressions = (test: Backend.Tester) => {
  describe("CaseStore.importCase", () => {
    // correlateOrOpen(claim, [doc=2], 1000), importCase(closed, [doc=2]), byStatus(closed, 1)
    test("a closed case imports although an open case holds its key, which stays with the open case", () =>
      Effect.gen(function* () {
        const store = yield* CaseStore
        const key = CorrelationKey.make("doc", "2")
        const holder = (yield* store.correlateOrOpen("claim", [key], at(1_000))).case
        const closed = new Case({
          id: generateCaseId(),
          kind: "claim",
          status: "closed",
          correlation: [key],
          state: null,
          version: CaseVersion.make(0),
          openedAt: at(1_000),
          runs: [],
        })
        yield* store.importCase(closed, [], [])
        assert.deepStrictEqual(yield* store.case(closed.id), Option.some(closed))
        assert.deepStrictEqual(yield* store.correlate([key]), Option.some(holder))
      }).pipe(Backend.asFreshTenant))
  })

  describe("TaskStore.claim", () => {
    // open(state expired, candidateRoles [clerk]), takeOver(task, ann, ann, [])
    test("eligibility outranks availability: a decided task refuses the wrong role as WrongRole", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* store.open(task("expired", ["clerk"]))
        assertError(yield* Effect.flip(store.claim(t.id, "ann", [])), new WrongRole({ actor: "ann" }))
        assertError(yield* Effect.flip(store.takeOver(t.id, "bob", "ann", [])), new WrongRole({ actor: "ann" }))
        // With the role, the state is what refuses.
        assertError(
          yield* Effect.flip(store.claim(t.id, "ann", ["clerk"])),
          new NotPending({ task: t.id, state: "expired" }),
        )
      }).pipe(Backend.asFreshTenant))
  })

  describe("JournalStore.append", () => {
    // acquire(run, w1, 600), append(run, held, [started(e), started(e)])
    test("two starts of one effect in one batch are DuplicateEffect, and nothing is written", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const run = generateRunId()
        const effect = EffectKey.make(randomBytes(32).toString("hex"))
        const lease = yield* store.acquire(run, "w1", 600)
        const start = started(effect)
        assertError(
          yield* Effect.flip(store.append(run, lease.epoch, [start, start])),
          new DuplicateEffect({ run, effect }),
        )
        assert.deepStrictEqual(yield* store.head(run), { seq: 0, hash: Digest.ZERO })
        assert.strictEqual((yield* store.append(run, Epoch.make(lease.epoch), [start])).length, 1)
      }).pipe(Backend.asFreshTenant))
  })
}

for (const backend of [Backend.memory(), Backend.sqlite(), Backend.postgres(inject("pgUrl"))]) {
  describe(`model regressions on ${backend.name}`, () => Backend.battery(backend, (test) => regressions(test)))
}

// internal

const task = (state: Task["state"], candidateRoles: ReadonlyArray<string>) =>
  new Task({
    id: TaskId.make(randomBytes(32).toString("hex")),
    run: generateRunId(),
    case: Option.none(),
    kind: "approve",
    justification: new Justification({
      summary: "refund",
      proposedAction: null,
      confidence: Option.none(),
      cost: Option.none(),
      evidence: [],
    }),
    candidateRoles,
    assignee: Option.none(),
    priority: "normal",
    state,
    onExpiry: "deny",
    escalateTo: [],
    excludedActors: [],
    createdAt: at(1_000),
    dueAt: Option.none(),
  })

const started = (effect: EffectKey) =>
  Journal.Append.make({
    case: Option.none(),
    step: StepId.make(0),
    effectKey: Option.some(effect),
    kind: {
      kind: "EffectStarted",
      descriptor: { tool: "mail.send" },
      recovery: "retry",
      mutates: true,
      attempt: 1,
      backoff_ms: 0,
      outbound_label: "public",
    },
  })
