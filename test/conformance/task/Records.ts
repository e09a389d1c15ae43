/**
 * The plain verbs: open, task, setState, forCase, openCount, overdue.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateCaseId } from "../../../src/domain/Ids.js"
import { Task } from "../../../src/domain/Task.js"
import { Excluded } from "../../../src/errors/ClaimError.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, ids, opened, read, type Tester, task, taskId } from "./Fixtures.js"

/** Names a delimited encoding would split or mangle. */
const awkward = ["a,b", 'say "hi"', "{braces}", "back\\slash", "", "Zoë, QA", "NULL"]

export const records = (test: Tester) => {
  describe("open", () => {
    test("returns the stored row, equal to the task opened", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = task({ case: generateCaseId(), candidateRoles: ["ops"], dueAt: 2_000, priority: "high" })
        assert.deepStrictEqual(yield* store.open(t), t)
        assert.deepStrictEqual(yield* store.task(t.id), Option.some(t))
      }).pipe(asFreshTenant))

    test("a second open under one id keeps the first task", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const first = task({ kind: "first" })
        yield* store.open(first)
        const second = yield* store.open(new Task({ ...task({ kind: "second", state: "completed" }), id: first.id }))
        assert.deepStrictEqual(second, first)
        assert.deepStrictEqual(yield* read(first.id), first)
      }).pipe(asFreshTenant))
  })

  describe("task", () => {
    test("an absent id reads none", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        assert.deepStrictEqual(yield* store.task(taskId()), Option.none())
      }).pipe(asFreshTenant))

    test("role and actor names come back verbatim, commas and all", () =>
      Effect.gen(function* () {
        const t = yield* opened({
          candidateRoles: awkward,
          escalateTo: [...awkward].reverse(),
          excludedActors: awkward,
        })
        const back = yield* read(t.id)
        assert.deepStrictEqual(back.candidateRoles, awkward)
        assert.deepStrictEqual(back.escalateTo, [...awkward].reverse())
        assert.deepStrictEqual(back.excludedActors, awkward)
      }).pipe(asFreshTenant))

    test("an actor named with a comma is one actor, excluded as one", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ excludedActors: ["alice,bob"] })
        assertError(yield* Effect.flip(store.claim(t.id, "alice,bob", [])), new Excluded({ actor: "alice,bob" }))
        assert.deepStrictEqual((yield* store.claim(t.id, "alice", [])).assignee, Option.some("alice"))
      }).pipe(asFreshTenant))
  })

  describe("setState", () => {
    test("writes any state, with no transition guard", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        yield* store.setState(t.id, "completed")
        assert.strictEqual((yield* read(t.id)).state, "completed")
        yield* store.setState(t.id, "open")
        assert.strictEqual((yield* read(t.id)).state, "open")
      }).pipe(asFreshTenant))

    test("a missing task is NotFound", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const id = taskId()
        assertError(yield* Effect.flip(store.setState(id, "expired")), new NotFound({ what: id }))
      }).pipe(asFreshTenant))
  })

  describe("forCase", () => {
    test("every state of the case's tasks, oldest first, ties by id; other cases absent", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const kase = generateCaseId()
        const late = yield* opened({ case: kase, createdAt: 30 })
        const tied = [yield* opened({ case: kase, createdAt: 10 }), yield* opened({ case: kase, createdAt: 10 })]
        const done = yield* opened({ case: kase, createdAt: 20, state: "completed" })
        yield* opened({ case: generateCaseId(), createdAt: 5 })
        yield* opened({ createdAt: 5 })
        const byId = [...ids(tied)].sort()
        assert.deepStrictEqual(ids(yield* store.forCase(kase)), [...byId, done.id, late.id])
        assert.deepStrictEqual(yield* store.forCase(generateCaseId()), [])
      }).pipe(asFreshTenant))
  })

  describe("openCount", () => {
    test("counts open, claimed and escalated; a claim leaves it, a completion takes one off", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        assert.strictEqual(yield* store.openCount(), 0)
        const a = yield* opened()
        yield* opened({ state: "escalated" })
        yield* opened({ state: "expired" })
        yield* opened({ state: "completed" })
        assert.strictEqual(yield* store.openCount(), 2)
        yield* store.claim(a.id, "rita", [])
        assert.strictEqual(yield* store.openCount(), 2)
        yield* store.setState(a.id, "completed")
        assert.strictEqual(yield* store.openCount(), 1)
      }).pipe(asFreshTenant))
  })

  describe("overdue", () => {
    test("open and claimed tasks with dueAt <= now, earliest first, the boundary inclusive", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const later = yield* opened({ dueAt: 100 })
        const sooner = yield* opened({ dueAt: 50 })
        const claimed = yield* opened({ dueAt: 70 })
        yield* store.claim(claimed.id, "rita", [])
        yield* opened({ dueAt: 101 })
        yield* opened()
        assert.deepStrictEqual(ids(yield* store.overdue(at(100), 10)), [sooner.id, claimed.id, later.id])
        assert.deepStrictEqual(ids(yield* store.overdue(at(99), 10)), [sooner.id, claimed.id])
        assert.deepStrictEqual(ids(yield* store.overdue(at(100), 2)), [sooner.id, claimed.id])
        assert.deepStrictEqual(yield* store.overdue(at(100), 0), [])
        assert.deepStrictEqual(yield* store.overdue(at(49), 10), [])
      }).pipe(asFreshTenant))

    test("escalated, completed and expired tasks are left out", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const escalated = yield* opened({ dueAt: 10, candidateRoles: ["ops"], escalateTo: ["lead"] })
        yield* store.escalate(escalated.id)
        yield* opened({ dueAt: 10, state: "escalated" })
        yield* opened({ dueAt: 10, state: "completed" })
        yield* opened({ dueAt: 10, state: "expired" })
        const open = yield* opened({ dueAt: 10 })
        assert.deepStrictEqual(ids(yield* store.overdue(at(10), 10)), [open.id])
      }).pipe(asFreshTenant))

    test("ties on dueAt break on id", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const tied = [yield* opened({ dueAt: 10 }), yield* opened({ dueAt: 10 }), yield* opened({ dueAt: 10 })]
        assert.deepStrictEqual(ids(yield* store.overdue(at(10), 10)), [...ids(tied)].sort())
      }).pipe(asFreshTenant))
  })
}
