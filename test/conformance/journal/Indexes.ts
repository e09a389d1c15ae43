/**
 * §6.3.5, 6.5–6.7: seal, the derived indexes (outcome, admission, case history, recent activity),
 * cancellation requests, and one tenant's journal invisible to another.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Digest from "../../../src/domain/Digest.js"
import { Epoch, generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { Timestamp } from "../../../src/domain/Time.js"
import { DuplicateAdmission, Fenced, RunSealed } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, freshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { admitted, concluded, leased, note, one, type Tester, written } from "./Fixtures.js"

const FAR = Timestamp.make(4_000_000_000)

export const indexes = (test: Tester) => {
  describe("seal", () => {
    test("returns the chain head; an unwritten run seals at ZERO", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const a = yield* written(3)
          const b = yield* leased()
          assert.strictEqual(yield* store.seal(a.run, a.epoch, "succeeded"), a.records[2]?.hash)
          assert.strictEqual(yield* store.seal(b.run, b.epoch, "swept"), Digest.ZERO)
        }),
      ))

    test("the seal releases the lease it sealed under, with or without a last batch; a refused seal keeps it", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const a = yield* written(1)
          const b = yield* written(1)
          yield* store.seal(a.run, a.epoch, "succeeded")
          yield* store.seal(b.run, b.epoch, "succeeded", [note("last")])
          // Released, not lapsed: another owner takes it at once, a step up, and no recovery finds it.
          assert.strictEqual((yield* store.acquire(a.run, "worker-b", 60)).epoch, a.epoch + 1)
          assert.strictEqual((yield* store.acquire(b.run, "worker-b", 60)).epoch, b.epoch + 1)
          // A seal that is refused (here: a stale epoch) releases nothing.
          const c = yield* written(1)
          yield* store.releaseLease(c.run, c.epoch)
          const next = yield* store.acquire(c.run, "worker-b", 60)
          assertError(
            yield* Effect.flip(store.seal(c.run, c.epoch, "succeeded")),
            new Fenced({ run: c.run, held: c.epoch, current: next.epoch }),
          )
          assert.strictEqual((yield* Effect.flip(store.acquire(c.run, "worker-c", 60)))._tag, "LeaseHeld")
        }),
      ))

    test("a stale or missing epoch is Fenced; a second seal is RunSealed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const unleased = generateRunId()
          assertError(
            yield* Effect.flip(store.seal(unleased, Epoch.make(1), "succeeded")),
            new Fenced({ run: unleased, held: 1, current: 0 }),
          )
          const { run, epoch } = yield* written(1)
          yield* store.releaseLease(run, epoch)
          const next = yield* store.acquire(run, "worker-b", 60)
          assertError(yield* Effect.flip(store.seal(run, epoch, "succeeded")), new Fenced({ run, held: 1, current: 2 }))
          yield* store.seal(run, next.epoch, "quarantined")
          assertError(
            yield* Effect.flip(store.seal(run, next.epoch, "succeeded")),
            new RunSealed({ run, outcome: "quarantined" }),
          )
        }),
      ))

    test("with a last batch: appends it and seals at its head in one step; a refused batch seals nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const a = yield* written(2)
          const head = yield* store.seal(a.run, a.epoch, "succeeded", [note("last"), concluded("succeeded")])
          const records = yield* store.read(a.run, 1)
          assert.deepStrictEqual(
            records.map((r) => r.kind.kind),
            ["Note", "Note", "Note", "RunSealed"],
          )
          assert.strictEqual(head, records[3]?.hash)
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 10), [a.run])
          assertError(
            yield* Effect.flip(store.append(a.run, a.epoch, one(note("after")))),
            new RunSealed({ run: a.run, outcome: "succeeded" }),
          )
          // A batch the append would refuse (a stale epoch) writes none of it and leaves the run open.
          const b = yield* written(1)
          yield* store.releaseLease(b.run, b.epoch)
          const next = yield* store.acquire(b.run, "worker-b", 60)
          assertError(
            yield* Effect.flip(store.seal(b.run, b.epoch, "succeeded", [note("late")])),
            new Fenced({ run: b.run, held: b.epoch, current: next.epoch }),
          )
          assert.strictEqual((yield* store.head(b.run)).seq, 1)
          yield* store.append(b.run, next.epoch, one(note("still open")))
        }),
      ))
  })

  describe("runsByOutcome", () => {
    test("runs whose latest conclusion is the outcome, most recent first; the last conclusion wins", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const conclude = (outcome: "succeeded" | "failed") =>
            Effect.gen(function* () {
              const { run, epoch } = yield* leased()
              yield* store.append(run, epoch, [note("work"), concluded(outcome)])
              return { run, epoch }
            })
          const a = yield* conclude("succeeded")
          const b = yield* conclude("failed")
          const c = yield* conclude("succeeded")
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 10), [c.run, a.run])
          assert.deepStrictEqual(yield* store.runsByOutcome("failed", 10), [b.run])
          // A resume concludes the failed run again: it moves, and is now the most recent.
          yield* store.append(b.run, b.epoch, one(concluded("succeeded")))
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 10), [b.run, c.run, a.run])
          assert.deepStrictEqual(yield* store.runsByOutcome("failed", 10), [])
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 2), [b.run, c.run])
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 0), [])
        }),
      ))

    test("a bare seal, with no conclusion record (the sweeper's evidence runs), is listed under its outcome", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const a = yield* leased()
          const b = yield* written(1)
          yield* store.seal(a.run, a.epoch, "swept")
          yield* store.seal(b.run, b.epoch, "swept", [note("evidence")])
          assert.deepStrictEqual(yield* store.runsByOutcome("swept", 10), [b.run, a.run])
        }),
      ))
  })

  describe("admittedAs / forgetAdmissions", () => {
    test("a keyed admission claims the key; an unkeyed one claims nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          assert.deepStrictEqual(yield* store.admittedAs("order-1"), Option.none())
          yield* store.append(run, epoch, one(admitted("order-1")))
          assert.deepStrictEqual(yield* store.admittedAs("order-1"), Option.some(run))
          const other = yield* leased()
          yield* store.append(other.run, other.epoch, one(admitted()))
          assert.strictEqual(yield* store.forgetAdmissions(FAR), 1)
        }),
      ))

    test("a claimed key is DuplicateAdmission naming the holder, and the refused batch writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const holder = yield* leased()
          yield* store.append(holder.run, holder.epoch, one(admitted("order-2")))
          const late = yield* leased()
          const e = yield* Effect.flip(store.append(late.run, late.epoch, [admitted("order-3"), admitted("order-2")]))
          assertError(e, new DuplicateAdmission({ key: "order-2", run: holder.run }))
          assert.strictEqual((yield* store.head(late.run)).seq, 0)
          // The refused batch claimed nothing, not even its other key.
          assert.deepStrictEqual(yield* store.admittedAs("order-3"), Option.none())
          assert.deepStrictEqual(
            yield* store.recentRuns(Option.none(), 10).pipe(Effect.map((rs) => rs.map((r) => r.run))),
            [holder.run],
          )
        }),
      ))

    test("frees keys admitted at or before the instant, counts them, and leaves the runs alone", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          yield* store.append(run, epoch, [admitted("k-1"), note("n")])
          const other = yield* leased()
          yield* store.append(other.run, other.epoch, one(admitted("k-2")))
          assert.strictEqual(yield* store.forgetAdmissions(Timestamp.make(0)), 0)
          assert.deepStrictEqual(yield* store.admittedAs("k-1"), Option.some(run))
          // Admission times are the backend's now, so "now or later" frees both.
          const now = Timestamp.make(Math.floor(Date.now() / 1000) + 5)
          assert.strictEqual(yield* store.forgetAdmissions(now), 2)
          assert.deepStrictEqual(yield* store.admittedAs("k-1"), Option.none())
          assert.strictEqual((yield* store.head(run)).seq, 2)
          assert.strictEqual(yield* store.forgetAdmissions(FAR), 0)
          // A freed key can be claimed again.
          const again = yield* leased()
          yield* store.append(again.run, again.epoch, one(admitted("k-1")))
          assert.deepStrictEqual(yield* store.admittedAs("k-1"), Option.some(again.run))
        }),
      ))
  })

  describe("recentRuns", () => {
    test("(updatedAt desc, run desc), with the latest case; paging reassembles the list exactly", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const kase = generateCaseId()
          const runs = []
          for (let i = 0; i < 5; i++) runs.push(yield* written(1, i === 2 ? { case: kase } : {}))
          // A later batch without a case keeps the run's case.
          const r2 = runs[2]
          if (r2 !== undefined) yield* store.append(r2.run, r2.epoch, one(note("caseless")))
          const all = yield* store.recentRuns(Option.none(), 100)
          assert.deepStrictEqual(all.map((r) => r.run).sort(), runs.map((r) => r.run).sort())
          const sorted = [...all].sort((x, y) =>
            x.updatedAt !== y.updatedAt ? y.updatedAt - x.updatedAt : x.run < y.run ? 1 : x.run > y.run ? -1 : 0,
          )
          assert.deepStrictEqual(all, sorted)
          assert.deepStrictEqual(
            all.filter((r) => Option.isSome(r.case)).map((r) => [r.run, r.case]),
            [[r2?.run, Option.some(kase)]],
          )
          for (const size of [1, 2, 3]) {
            const pages = []
            let cursor = Option.none<{ updatedAt: Timestamp; run: (typeof all)[number]["run"] }>()
            for (;;) {
              const page = yield* store.recentRuns(cursor, size)
              if (page.length === 0) break
              pages.push(...page)
              const last = page[page.length - 1]
              if (last === undefined) break
              cursor = Option.some({ updatedAt: last.updatedAt, run: last.run })
            }
            assert.deepStrictEqual(pages, all)
          }
          assert.deepStrictEqual(yield* store.recentRuns(Option.none(), 0), [])
        }),
      ))
  })

  describe("caseHistory", () => {
    test("only records stamped with the case, oldest first by (run, seq)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const kase = generateCaseId()
          const a = yield* leased()
          const b = yield* leased()
          const [a1] = yield* store.append(a.run, a.epoch, one(note("a1", { case: kase })))
          const [b1] = yield* store.append(b.run, b.epoch, one(note("b1", { case: kase })))
          yield* store.append(a.run, a.epoch, one(note("a2 elsewhere", { case: generateCaseId() })))
          const [, a4] = yield* store.append(a.run, a.epoch, [note("a3 unstamped"), note("a4", { case: kase })])
          const history = yield* store.caseHistory(kase, 10)
          assert.deepStrictEqual<ReadonlyArray<unknown>>(history, [a1, a4, b1])
          assert.deepStrictEqual<ReadonlyArray<unknown>>(yield* store.caseHistory(kase, 2), [a1, a4])
          assert.deepStrictEqual(yield* store.caseHistory(kase, 0), [])
          assert.deepStrictEqual(yield* store.caseHistory(generateCaseId(), 10), [])
        }),
      ))
  })

  describe("requestCancel / cancellation", () => {
    test("the first request is stored (true), later ones change nothing (false); no lease needed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const run = generateRunId()
          assert.deepStrictEqual(yield* store.cancellation(run), Option.none())
          assert.isTrue(yield* store.requestCancel(run, "alice", "wrong customer"))
          assert.isFalse(yield* store.requestCancel(run, "bob", "changed mind"))
          assert.deepStrictEqual(
            yield* store.cancellation(run),
            Option.some({ actor: "alice", reason: "wrong customer" }),
          )
        }),
      ))
  })

  describe("tenancy", () => {
    test("one tenant's journal, leases, keys and requests are invisible to another", () =>
      Effect.gen(function* () {
        const store = yield* JournalStore
        const a = freshTenant()
        const b = freshTenant()
        const kase = generateCaseId()
        const { run, epoch } = yield* written(2, { case: kase }).pipe(Effect.provideService(Tenant, a))
        yield* Effect.gen(function* () {
          yield* store.append(run, epoch, one(admitted("shared-key")))
          yield* store.append(run, epoch, one(concluded("succeeded")))
          yield* store.requestCancel(run, "alice", "r")
        }).pipe(Effect.provideService(Tenant, a))
        yield* Effect.gen(function* () {
          assert.deepStrictEqual(yield* store.read(run, 1), [])
          assert.deepStrictEqual(yield* store.head(run), { seq: 0, hash: Digest.ZERO })
          assert.deepStrictEqual(yield* store.admittedAs("shared-key"), Option.none())
          assert.deepStrictEqual(yield* store.runsByOutcome("succeeded", 10), [])
          assert.deepStrictEqual(yield* store.recentRuns(Option.none(), 10), [])
          assert.deepStrictEqual(yield* store.caseHistory(kase, 10), [])
          assert.deepStrictEqual(yield* store.cancellation(run), Option.none())
          assertError(
            yield* Effect.flip(store.append(run, epoch, one(note("x")))),
            new Fenced({ run, held: 1, current: 0 }),
          )
          // The same run id and key are separate matters here.
          const lease = yield* store.acquire(run, "worker-b", 60)
          assert.strictEqual(lease.epoch, 1)
          yield* store.append(run, lease.epoch, one(admitted("shared-key")))
          assert.deepStrictEqual(yield* store.admittedAs("shared-key"), Option.some(run))
        }).pipe(Effect.provideService(Tenant, b))
        assert.strictEqual((yield* store.head(run).pipe(Effect.provideService(Tenant, a))).seq, 4)
      }))
  })
}
