/**
 * The archive verbs (§9.2, §9.3): `runs` pages the written runs by id, `readPage` pages one run,
 * and `importRecords` writes records verbatim, chain re-checked, with the derived indexes, and
 * seals runs in the order given (each at the next log position), all or nothing.
 */
import { describe } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import * as Digest from "../../../src/domain/Digest.js"
import { generateCaseId, generateRunId } from "../../../src/domain/Ids.js"
import * as Journal from "../../../src/domain/Journal.js"
import { Tenant } from "../../../src/domain/Tenant.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { LogStore } from "../../../src/services/LogStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant, freshTenant } from "../../support/Backend.js"
import { admitted, concluded, leased, note, type Tester, written } from "./Fixtures.js"

const plain = (r: Journal.Record) => ({ ...r, raw: Buffer.from(r.raw).toString("hex") })

/** The run's records as an export carries them. */
const verbatim = (records: ReadonlyArray<Journal.Record>): ReadonlyArray<Journal.Verbatim> => records

const nonEmpty = <A>(as: ReadonlyArray<A>): readonly [A, ...Array<A>] => {
  const [first, ...rest] = as
  if (first === undefined) throw new Error("expected records")
  return [first, ...rest]
}

/** A written run in a tenant of its own, read back: what an import elsewhere copies. */
const source = (build: Effect.Effect<{ readonly run: Journal.Record["run"] }, unknown, JournalStore | Tenant>) =>
  asFreshTenant(
    Effect.gen(function* () {
      const { run } = yield* build
      const store = yield* JournalStore
      return { run, records: yield* store.read(run, 1) }
    }),
  )

export const imports = (test: Tester) => {
  describe("runs and readPage", () => {
    test("runs lists written runs by id in pages; a leased run with no record is not listed", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const made = yield* Effect.forEach([1, 2, 3], () => written(1))
          yield* leased()
          const ids = made.map((m) => m.run).sort()
          assert.deepStrictEqual(yield* store.runs(Option.none(), 10), ids)
          assert.deepStrictEqual(yield* store.runs(Option.none(), 2), ids.slice(0, 2))
          assert.deepStrictEqual(yield* store.runs(Option.fromNullable(ids[1]), 10), ids.slice(2))
        }),
      ))

    test("readPage returns at most limit records from seq from", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, records } = yield* written(5)
          assert.deepStrictEqual((yield* store.readPage(run, 2, 2)).map(plain), records.slice(1, 3).map(plain))
          assert.deepStrictEqual((yield* store.readPage(run, 5, 10)).map(plain), records.slice(4).map(plain))
          assert.deepStrictEqual(yield* store.readPage(run, 6, 10), [])
        }),
      ))
  })

  describe("importRecords", () => {
    test("writes records verbatim with their attestation, and the indexes answer as for appended ones", () =>
      Effect.gen(function* () {
        const kase = generateCaseId()
        const from = yield* source(
          Effect.gen(function* () {
            const store = yield* JournalStore
            const { run, epoch } = yield* leased()
            yield* store.append(run, epoch, [admitted("k-import"), note("n", { case: kase }), concluded("failed")])
            return { run }
          }),
        )
        const signed = from.records.map((r, i) =>
          i === 1 ? { ...r, attestation: Option.some(new Journal.Attestation({ keyId: "k1", signature: "sig" })) } : r,
        )
        const store = yield* JournalStore
        yield* Effect.gen(function* () {
          assert.strictEqual(yield* store.importRecords(nonEmpty(verbatim(signed)), []), 3)
          const read = yield* store.read(from.run, 1)
          assert.deepStrictEqual(
            read.map(plain),
            signed.map((r) => plain(new Journal.Record(r))),
          )
          assert.deepStrictEqual(yield* store.verify(from.run), { seq: 3, hash: from.records[2]?.hash })
          assert.deepStrictEqual(yield* store.admittedAs("k-import"), Option.some(from.run))
          assert.deepStrictEqual(yield* store.runsByOutcome("failed", 10), [from.run])
          assert.deepStrictEqual(
            (yield* store.caseHistory(kase, 10)).map((r) => r.seq),
            [2],
          )
          assert.deepStrictEqual(
            (yield* store.recentRuns(Option.none(), 10)).map((r) => ({ run: r.run, case: r.case })),
            [{ run: from.run, case: Option.some(kase) }],
          )
        }).pipe(asFreshTenant)
      }))

    test("continues a stored chain across calls, and a seal freezes the run at its head", () =>
      Effect.gen(function* () {
        const from = yield* source(written(4))
        const store = yield* JournalStore
        yield* Effect.gen(function* () {
          yield* store.importRecords(nonEmpty(from.records.slice(0, 2)), [])
          yield* store.importRecords(nonEmpty(from.records.slice(2)), [{ run: from.run, outcome: "succeeded" }])
          assert.deepStrictEqual(yield* store.head(from.run), { seq: 4, hash: from.records[3]?.hash })
          const lease = yield* store.acquire(from.run, "late", 60)
          const appended = yield* Effect.either(store.append(from.run, lease.epoch, [note("after")]))
          assert.strictEqual(Either.isLeft(appended) ? appended.left._tag : "appended", "RunSealed")
        }).pipe(asFreshTenant)
      }))

    const refusals: ReadonlyArray<
      readonly [string, (records: ReadonlyArray<Journal.Record>) => ReadonlyArray<Journal.Verbatim>, number]
    > = [
      ["a gap in the seqs", (rs) => [rs[0], rs[2]].filter((r) => r !== undefined), 3],
      [
        "a changed byte of raw",
        (rs) =>
          rs.map((r, i) => {
            if (i !== 1) return r
            const raw = Buffer.from(r.raw)
            raw[5] = (raw[5] ?? 0) ^ 1
            return { ...r, raw }
          }),
        2,
      ],
      ["a record that does not start at seq 1", (rs) => rs.slice(1), 2],
    ]
    for (const [name, damage, seq] of refusals) {
      test(`refuses ${name} with RecordRefused naming the seq, and writes nothing`, () =>
        Effect.gen(function* () {
          const from = yield* source(written(3))
          const store = yield* JournalStore
          yield* Effect.gen(function* () {
            const refused = yield* Effect.flip(store.importRecords(nonEmpty(damage(from.records)), []))
            assert.strictEqual(refused._tag, "RecordRefused")
            if (refused._tag === "RecordRefused") assert.deepStrictEqual([refused.run, refused.seq], [from.run, seq])
            assert.deepStrictEqual(yield* store.runs(Option.none(), 10), [])
          }).pipe(asFreshTenant)
        }))
    }

    test("seals stored runs and runs with no records, in the order given, each at its head and the next log position", () =>
      Effect.gen(function* () {
        const first = yield* source(written(2))
        const second = yield* source(written(3))
        const store = yield* JournalStore
        const log = yield* LogStore
        yield* Effect.gen(function* () {
          yield* store.importRecords(nonEmpty([...first.records, ...second.records]), [])
          const bare = generateRunId()
          // Sealed later, in an order of the caller's: the log positions follow it.
          assert.strictEqual(
            yield* store.importRecords(
              [],
              [
                { run: second.run, outcome: "succeeded" },
                { run: bare, outcome: "swept" },
                { run: first.run, outcome: "cancelled" },
              ],
            ),
            0,
          )
          const leaves = yield* log.leaves(0, 10)
          assert.deepStrictEqual(
            leaves.map((p) => [p.index, p.leaf.run, p.leaf.records, p.leaf.chainHead, p.leaf.outcome]),
            [
              [0, second.run, 3, second.records[2]?.hash, "succeeded"],
              [1, bare, 0, Digest.ZERO, "swept"],
              [2, first.run, 2, first.records[1]?.hash, "cancelled"],
            ],
          )
          // The bare seal is indexed by its outcome, as a live one is.
          assert.deepStrictEqual(yield* store.runsByOutcome("swept", 10), [bare])
          const again = yield* Effect.flip(store.importRecords([], [{ run: first.run, outcome: "succeeded" }]))
          assert.strictEqual(again._tag, "RecordRefused")
        }).pipe(asFreshTenant)
      }))

    test("refuses records already stored, a seal of a sealed run or one named twice, and a claimed key, writing nothing", () =>
      Effect.gen(function* () {
        const from = yield* source(
          Effect.gen(function* () {
            const store = yield* JournalStore
            const { run, epoch } = yield* leased()
            yield* store.append(run, epoch, [admitted("k-held"), note("x")])
            return { run }
          }),
        )
        const other = yield* source(written(1))
        const store = yield* JournalStore
        const tenant = freshTenant()
        yield* Effect.gen(function* () {
          yield* store.importRecords(nonEmpty(from.records), [])
          const twice = yield* Effect.flip(store.importRecords(nonEmpty(from.records), []))
          assert.strictEqual(twice._tag, "RecordRefused")
          const twiceNamed = yield* Effect.flip(
            store.importRecords(nonEmpty(other.records), [
              { run: other.run, outcome: "succeeded" },
              { run: other.run, outcome: "succeeded" },
            ]),
          )
          assert.strictEqual(twiceNamed._tag, "RecordRefused")
          yield* store.importRecords([], [{ run: from.run, outcome: "succeeded" }])
          const strayed = yield* Effect.flip(
            store.importRecords(nonEmpty(other.records), [{ run: from.run, outcome: "succeeded" }]),
          )
          assert.strictEqual(strayed._tag, "RecordRefused")
          assert.deepStrictEqual(yield* store.runs(Option.none(), 10), [from.run])
        }).pipe(Effect.provideService(Tenant, tenant))
        // The key is held in the target by a run of its own: importing the source's admission would merge.
        const holder = freshTenant()
        yield* Effect.gen(function* () {
          const { run, epoch } = yield* leased()
          yield* store.append(run, epoch, [admitted("k-held")])
          const claimed = yield* Effect.flip(store.importRecords(nonEmpty(from.records), []))
          assert.strictEqual(claimed._tag, "RecordRefused")
          assert.deepStrictEqual(yield* store.runs(Option.none(), 10), [run])
        }).pipe(Effect.provideService(Tenant, holder))
      }))
  })
}
