/**
 * The reviewer's verbs: claim, release, takeOver, escalate, and the order of their refusals.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Task from "../../../src/domain/Task.js"
import {
  AlreadyClaimed,
  Excluded,
  NotHeld,
  NotPending,
  TaskNotFound,
  WrongRole,
} from "../../../src/errors/ClaimError.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { opened, read, type Tester, taskId } from "./Fixtures.js"

const claimedBy = (actor: string) => Option.some(actor)

export const claims = (test: Tester) => {
  describe("claim", () => {
    test("sets state claimed and assignee actor, and returns the row", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["ops", "finance"] })
        const claimed = yield* store.claim(t.id, "rita", ["finance"])
        assert.deepStrictEqual(claimed, new Task.Task({ ...t, state: "claimed", assignee: claimedBy("rita") }))
        assert.deepStrictEqual(yield* read(t.id), claimed)
      }).pipe(asFreshTenant))

    test("the holder's repeated claim is an idempotent success", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        const first = yield* store.claim(t.id, "rita", [])
        assert.deepStrictEqual(yield* store.claim(t.id, "rita", []), first)
      }).pipe(asFreshTenant))

    test("another reviewer is AlreadyClaimed, naming the holder", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        yield* store.claim(t.id, "rita", [])
        assertError(
          yield* Effect.flip(store.claim(t.id, "sam", [])),
          new AlreadyClaimed({ task: t.id, holder: "rita" }),
        )
        assert.deepStrictEqual((yield* read(t.id)).assignee, claimedBy("rita"))
      }).pipe(asFreshTenant))

    test("a claimed task with no recorded holder is AlreadyClaimed by the empty name", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ state: "claimed" })
        assertError(yield* Effect.flip(store.claim(t.id, "sam", [])), new AlreadyClaimed({ task: t.id, holder: "" }))
      }).pipe(asFreshTenant))

    test("an open task still naming another assignee is AlreadyClaimed by it", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ assignee: "rita" })
        assertError(
          yield* Effect.flip(store.claim(t.id, "sam", [])),
          new AlreadyClaimed({ task: t.id, holder: "rita" }),
        )
      }).pipe(asFreshTenant))

    test("a missing task is TaskNotFound", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const id = taskId()
        assertError(yield* Effect.flip(store.claim(id, "rita", [])), new TaskNotFound({ task: id }))
      }).pipe(asFreshTenant))

    test("a decided task is NotPending with its state", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        for (const state of ["completed", "expired"] as const) {
          const t = yield* opened({ state })
          assertError(yield* Effect.flip(store.claim(t.id, "rita", [])), new NotPending({ task: t.id, state }))
        }
      }).pipe(asFreshTenant))

    test("an escalated task can be claimed", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ state: "escalated", candidateRoles: ["lead"] })
        const claimed = yield* store.claim(t.id, "lena", ["lead"])
        assert.strictEqual(claimed.state, "claimed")
      }).pipe(asFreshTenant))

    test("no candidate roles admit any actor; otherwise one shared role suffices", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const anyone = yield* opened()
        assert.strictEqual((yield* store.claim(anyone.id, "rita", [])).state, "claimed")
        const some = yield* opened({ candidateRoles: ["ops", "finance"] })
        assert.strictEqual((yield* store.claim(some.id, "sam", ["legal", "ops"])).state, "claimed")
      }).pipe(asFreshTenant))

    test("an excluded actor is Excluded, before AlreadyClaimed or NotPending", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const held = yield* opened({ excludedActors: ["agent:proposer"] })
        yield* store.claim(held.id, "rita", [])
        const excluded = new Excluded({ actor: "agent:proposer" })
        assertError(yield* Effect.flip(store.claim(held.id, "agent:proposer", [])), excluded)
        const done = yield* opened({ excludedActors: ["agent:proposer"], state: "completed" })
        assertError(yield* Effect.flip(store.claim(done.id, "agent:proposer", [])), excluded)
      }).pipe(asFreshTenant))

    test("a reviewer without a candidate role is WrongRole, before AlreadyClaimed or NotPending", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const held = yield* opened({ candidateRoles: ["finance"] })
        yield* store.claim(held.id, "rita", ["finance"])
        const wrong = new WrongRole({ actor: "sam" })
        assertError(yield* Effect.flip(store.claim(held.id, "sam", ["ops"])), wrong)
        const done = yield* opened({ candidateRoles: ["finance"], state: "expired" })
        assertError(yield* Effect.flip(store.claim(done.id, "sam", [])), wrong)
      }).pipe(asFreshTenant))

    test("Excluded outranks WrongRole", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["finance"], excludedActors: ["sam"] })
        assertError(yield* Effect.flip(store.claim(t.id, "sam", ["ops"])), new Excluded({ actor: "sam" }))
      }).pipe(asFreshTenant))
  })

  describe("release", () => {
    test("the holder releases: state open, no assignee", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        yield* store.claim(t.id, "rita", [])
        yield* store.release(t.id, "rita")
        assert.deepStrictEqual(yield* read(t.id), t)
      }).pipe(asFreshTenant))

    test("a task escalated before it was claimed is released to open", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["ops"], escalateTo: ["lead"] })
        yield* store.escalate(t.id)
        yield* store.claim(t.id, "lena", ["lead"])
        yield* store.release(t.id, "lena")
        const back = yield* read(t.id)
        assert.strictEqual(back.state, "open")
        assert.deepStrictEqual(back.assignee, Option.none())
      }).pipe(asFreshTenant))

    test("a missing task is TaskNotFound", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const id = taskId()
        assertError(yield* Effect.flip(store.release(id, "rita")), new TaskNotFound({ task: id }))
      }).pipe(asFreshTenant))

    test("anyone but the holder, or a release of an unclaimed task, is NotHeld and changes nothing", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        assertError(yield* Effect.flip(store.release(t.id, "rita")), new NotHeld({ task: t.id, actor: "rita" }))
        const claimed = yield* store.claim(t.id, "rita", [])
        assertError(yield* Effect.flip(store.release(t.id, "sam")), new NotHeld({ task: t.id, actor: "sam" }))
        assert.deepStrictEqual(yield* read(t.id), claimed)
        yield* store.setState(t.id, "completed")
        assertError(yield* Effect.flip(store.release(t.id, "rita")), new NotHeld({ task: t.id, actor: "rita" }))
      }).pipe(asFreshTenant))
  })

  describe("takeOver", () => {
    test("hands a task claimed by `from` to the actor", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["ops"] })
        yield* store.claim(t.id, "rita", ["ops"])
        const taken = yield* store.takeOver(t.id, "rita", "sam", ["ops"])
        assert.deepStrictEqual(taken, new Task.Task({ ...t, state: "claimed", assignee: claimedBy("sam") }))
        assert.deepStrictEqual(yield* read(t.id), taken)
      }).pipe(asFreshTenant))

    test("runs claim's checks in claim's order: TaskNotFound, Excluded, WrongRole, NotPending", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const id = taskId()
        assertError(yield* Effect.flip(store.takeOver(id, "rita", "sam", [])), new TaskNotFound({ task: id }))
        const t = yield* opened({ candidateRoles: ["ops"], excludedActors: ["sam"], state: "completed" })
        assertError(yield* Effect.flip(store.takeOver(t.id, "rita", "sam", [])), new Excluded({ actor: "sam" }))
        assertError(yield* Effect.flip(store.takeOver(t.id, "rita", "tom", [])), new WrongRole({ actor: "tom" }))
        assertError(
          yield* Effect.flip(store.takeOver(t.id, "rita", "tom", ["ops"])),
          new NotPending({ task: t.id, state: "completed" }),
        )
      }).pipe(asFreshTenant))

    test("a stale `from` is NotHeld naming it, and the current holder stays", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        yield* store.claim(t.id, "rita", [])
        yield* store.takeOver(t.id, "rita", "sam", [])
        assertError(
          yield* Effect.flip(store.takeOver(t.id, "rita", "tom", [])),
          new NotHeld({ task: t.id, actor: "rita" }),
        )
        assert.deepStrictEqual((yield* read(t.id)).assignee, claimedBy("sam"))
      }).pipe(asFreshTenant))

    test("a task nobody holds is NotHeld: use claim", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened()
        assertError(
          yield* Effect.flip(store.takeOver(t.id, "rita", "sam", [])),
          new NotHeld({ task: t.id, actor: "rita" }),
        )
        assert.deepStrictEqual(yield* read(t.id), t)
      }).pipe(asFreshTenant))
  })

  describe("escalate", () => {
    test("a missing task is NotFound", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const id = taskId()
        assertError(yield* Effect.flip(store.escalate(id)), new NotFound({ what: id }))
      }).pipe(asFreshTenant))

    test("widens the audience as a union in order, clears the assignee, keeps the exclusions", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({
          candidateRoles: ["ops", "lead"],
          escalateTo: ["lead", "risk,audit"],
          excludedActors: ["bot"],
        })
        yield* store.claim(t.id, "rita", ["ops"])
        const escalated = yield* store.escalate(t.id)
        const expected = new Task.Task({ ...t, state: "escalated", candidateRoles: ["ops", "lead", "risk,audit"] })
        assert.deepStrictEqual(escalated, expected)
        assert.deepStrictEqual(yield* read(t.id), expected)
        assert.deepStrictEqual(yield* store.escalate(t.id), expected)
      }).pipe(asFreshTenant))

    test("a task open to every role stays open to every role", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ escalateTo: ["lead"] })
        assert.deepStrictEqual((yield* store.escalate(t.id)).candidateRoles, [])
      }).pipe(asFreshTenant))

    test("the widened audience may claim; an excluded actor still may not", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const t = yield* opened({ candidateRoles: ["ops"], escalateTo: ["lead"], excludedActors: ["boss"] })
        assertError(yield* Effect.flip(store.claim(t.id, "lena", ["lead"])), new WrongRole({ actor: "lena" }))
        yield* store.escalate(t.id)
        assertError(yield* Effect.flip(store.claim(t.id, "boss", ["lead"])), new Excluded({ actor: "boss" }))
        assert.deepStrictEqual((yield* store.claim(t.id, "lena", ["lead"])).assignee, claimedBy("lena"))
      }).pipe(asFreshTenant))

    test("a decided task is returned unchanged", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        for (const state of ["completed", "expired"] as const) {
          const t = yield* opened({ state, candidateRoles: ["ops"], escalateTo: ["lead"], assignee: "rita" })
          assert.deepStrictEqual(yield* store.escalate(t.id), t)
          assert.deepStrictEqual(yield* read(t.id), t)
        }
      }).pipe(asFreshTenant))
  })
}
