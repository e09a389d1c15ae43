/**
 * G1: one tenant per call. No task verb reads or moves another tenant's task.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { generateCaseId } from "../../../src/domain/Ids.js"
import { Task } from "../../../src/domain/Task.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { NotHeld, TaskNotFound } from "../../../src/errors/ClaimError.js"
import { NotFound } from "../../../src/errors/StoreError.js"
import { TaskStore } from "../../../src/services/TaskStore.js"
import { assert } from "../../support/Assert.js"
import { freshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { at, ids, type Tester, task } from "./Fixtures.js"

export const tenancy = (test: Tester) => {
  describe("tenancy", () => {
    test("one id in two tenants is two tasks", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const [a, b] = [freshTenant(), freshTenant()]
        const mine = task({ kind: "in-a" })
        const theirs = new Task({ ...task({ kind: "in-b" }), id: mine.id })
        assert.deepStrictEqual(yield* store.open(mine).pipe(Effect.provideService(Tenant, a)), mine)
        assert.deepStrictEqual(yield* store.open(theirs).pipe(Effect.provideService(Tenant, b)), theirs)
        yield* store.claim(mine.id, "rita", []).pipe(Effect.provideService(Tenant, a))
        assert.deepStrictEqual(
          (yield* store.task(mine.id).pipe(Effect.provideService(Tenant, b))).pipe(Option.map((t) => t.state)),
          Option.some("open" as const),
        )
      }))

    test("no verb of another tenant reads or moves the task", () =>
      Effect.gen(function* () {
        const store = yield* TaskStore
        const [a, b] = [freshTenant(), freshTenant()]
        const kase = generateCaseId()
        const t = task({ case: kase, dueAt: 10 })
        yield* store.open(t).pipe(Effect.provideService(Tenant, a))
        const asB = <A, E>(effect: Effect.Effect<A, E, Tenant>) => Effect.provideService(effect, Tenant, b)
        assert.deepStrictEqual(yield* asB(store.task(t.id)), Option.none())
        assertError(yield* Effect.flip(asB(store.claim(t.id, "rita", []))), new TaskNotFound({ task: t.id }))
        assertError(yield* Effect.flip(asB(store.release(t.id, "rita"))), new TaskNotFound({ task: t.id }))
        assertError(yield* Effect.flip(asB(store.takeOver(t.id, "rita", "sam", []))), new TaskNotFound({ task: t.id }))
        assertError(yield* Effect.flip(asB(store.setState(t.id, "completed"))), new NotFound({ what: t.id }))
        assertError(yield* Effect.flip(asB(store.escalate(t.id))), new NotFound({ what: t.id }))
        assert.deepStrictEqual(yield* asB(store.queue([], 10)), [])
        assert.deepStrictEqual(yield* asB(store.forCase(kase)), [])
        assert.deepStrictEqual(yield* asB(store.openCount()), 0)
        assert.deepStrictEqual(yield* asB(store.overdue(at(10), 10)), [])
        const asA = <A, E>(effect: Effect.Effect<A, E, Tenant>) => Effect.provideService(effect, Tenant, a)
        assert.deepStrictEqual(yield* asA(store.task(t.id)), Option.some(t))
        assert.deepStrictEqual(ids(yield* asA(store.queue([], 10))), [t.id])
        // A's holder is invisible to B's takeOver: B's view of A's holder is not a view at all.
        yield* asA(store.claim(t.id, "rita", []))
        assertError(yield* Effect.flip(asB(store.release(t.id, "rita"))), new TaskNotFound({ task: t.id }))
        assertError(yield* Effect.flip(asA(store.release(t.id, "sam"))), new NotHeld({ task: t.id, actor: "sam" }))
      }))
  })
}
