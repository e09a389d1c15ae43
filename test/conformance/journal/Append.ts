/**
 * §6.1–6.3: appending, chaining, exactly-once and the all-or-nothing rule; `read` and `head`.
 */
import { describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Canonical from "../../../src/domain/Canonical.js"
import * as Digest from "../../../src/domain/Digest.js"
import { Epoch, generateCaseId, generateRunId, Seq } from "../../../src/domain/Ids.js"
import * as Journal from "../../../src/domain/Journal.js"
import { DuplicateEffect, Fenced, RecordTooLarge, RunSealed } from "../../../src/errors/StoreError.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { assertError } from "../../support/Errors.js"
import { admitted, effectKey, entry, leased, note, one, started, type Tester, written } from "./Fixtures.js"

export const append = (test: Tester) => {
  describe("append", () => {
    test("the first record is seq 1 after ZERO, hashed over its raw bytes", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const { run, records } = yield* written(1)
          const [r] = records
          assert.strictEqual(records.length, 1)
          assert.strictEqual(r?.run, run)
          assert.strictEqual(r?.seq, 1)
          assert.strictEqual(r?.prevHash, Digest.ZERO)
          assert.strictEqual(r?.hash, Digest.chain(Digest.ZERO, r?.raw ?? new Uint8Array()))
          assert.deepStrictEqual(r?.attestation, Option.none())
        }),
      ))

    test("raw is the canonical body with snake_case fields and the PascalCase kind", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const kase = generateCaseId()
          const key = effectKey()
          const [r] = yield* store.append(run, epoch, one(started(key, { case: kase, step: 3, phase: "compensating" })))
          const body = {
            run,
            seq: 1,
            case: kase,
            step: 3,
            phase: "compensating",
            effect_key: key,
            kind: "EffectStarted",
            descriptor: { tool: "mail.send" },
            recovery: "retry",
            mutates: true,
            attempt: 1,
            backoff_ms: 0,
            outbound_label: "public",
          }
          assert.deepStrictEqual(Buffer.from(r?.raw ?? []), Buffer.from(Canonical.bytes(body)))
          assert.strictEqual(r?.phase, "compensating")
          assert.deepStrictEqual(r?.case, Option.some(kase))
          assert.deepStrictEqual(r?.effectKey, Option.some(key))
        }),
      ))

    test("the phase defaults to forward and an unset case and key read as none", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const { records } = yield* written(1)
          assert.strictEqual(records[0]?.phase, "forward")
          assert.deepStrictEqual(records[0]?.case, Option.none())
          assert.deepStrictEqual(records[0]?.effectKey, Option.none())
          const raw = JSON.parse(Buffer.from(records[0]?.raw ?? []).toString("utf8"))
          assert.deepStrictEqual([raw.case, raw.effect_key, raw.phase], [null, null, "forward"])
        }),
      ))

    test("a batch continues the run's own chain: contiguous seqs, each prevHash its predecessor's hash", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch, records: first } = yield* written(2)
          // Another run's appends in between do not move this run's seqs.
          yield* written(3)
          const second = yield* store.append(run, epoch, [note("c"), note("d"), note("e")])
          const all = [...first, ...second]
          assert.deepStrictEqual(
            all.map((r) => r.seq),
            [1, 2, 3, 4, 5],
          )
          let prev = Digest.ZERO
          for (const r of all) {
            assert.strictEqual(r.prevHash, prev)
            assert.strictEqual(r.hash, Digest.chain(prev, r.raw))
            prev = r.hash
          }
        }),
      ))

    // pg counts a statement's parameters in 16 bits: a batch of 10,001 records in one statement
    // sent 70,012 and was refused; the store writes it in chunks inside the one transaction.
    test("a batch of 10,001 records is written whole, contiguous and chained, and reads back", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, records } = yield* written(10_001)
          assert.strictEqual(records.length, 10_001)
          const back = yield* store.read(run, 1)
          assert.strictEqual(back.length, 10_001)
          let prev = Digest.ZERO
          for (const [i, r] of back.entries()) {
            assert.strictEqual(r.seq, i + 1)
            assert.strictEqual(r.prevHash, prev)
            prev = r.hash
          }
          assert.strictEqual(back[10_000]?.hash, records[10_000]?.hash)
          assert.deepStrictEqual((yield* store.head(run)).seq, 10_001)
        }),
      ))

    test("a record over 1 MiB is RecordTooLarge and its whole batch writes nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const big = note("x".repeat(Journal.MAX_RECORD_BYTES))
          const bytes = Journal.body({ ...big, run, seq: Seq.make(2) }).length
          const e = yield* Effect.flip(store.append(run, epoch, [note("fine"), big]))
          assertError(e, new RecordTooLarge({ bytes, limit: 1_048_576 }))
          assert.deepStrictEqual(yield* store.head(run), { seq: 0, hash: Digest.ZERO })
          assert.deepStrictEqual(yield* store.read(run, 1), [])
        }),
      ))

    test("an oversized record is RecordTooLarge even after a duplicate EffectStarted in its batch: sizes are checked first", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = effectKey()
          const { run, epoch } = yield* leased()
          yield* store.append(run, epoch, one(started(key)))
          const big = note("x".repeat(Journal.MAX_RECORD_BYTES))
          const bytes = Journal.body({ ...big, run, seq: Seq.make(3) }).length
          const e = yield* Effect.flip(store.append(run, epoch, [started(key), big]))
          assertError(e, new RecordTooLarge({ bytes, limit: 1_048_576 }))
          assert.strictEqual((yield* store.head(run)).seq, 1)
        }),
      ))

    test("a record of exactly 1 MiB is accepted", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const overhead = Journal.body({ ...note(""), run, seq: Seq.make(1) }).length
          const [r] = yield* store.append(run, epoch, one(note("y".repeat(Journal.MAX_RECORD_BYTES - overhead))))
          assert.strictEqual(r?.raw.length, Journal.MAX_RECORD_BYTES)
        }),
      ))

    test("a second EffectStarted for one key is DuplicateEffect; the same key in another run is fine", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = effectKey()
          const a = yield* leased()
          const b = yield* leased()
          yield* store.append(a.run, a.epoch, one(started(key)))
          const e = yield* Effect.flip(store.append(a.run, a.epoch, [note("before"), started(key)]))
          assertError(e, new DuplicateEffect({ run: a.run, effect: key }))
          assert.strictEqual((yield* store.head(a.run)).seq, 1)
          const [other] = yield* store.append(b.run, b.epoch, one(started(key)))
          assert.strictEqual(other?.seq, 1)
        }),
      ))

    test("two EffectStarted for one key in one batch are DuplicateEffect and write nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = effectKey()
          const { run, epoch } = yield* leased()
          const e = yield* Effect.flip(store.append(run, epoch, [started(key), started(key)]))
          assertError(e, new DuplicateEffect({ run, effect: key }))
          assert.strictEqual((yield* store.head(run)).seq, 0)
        }),
      ))

    test("a batch admitting a held key before it repeats a start is DuplicateEffect: exactly-once comes before the admission index (§6.3)", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = effectKey()
          const holder = yield* leased()
          yield* store.append(holder.run, holder.epoch, one(admitted("order-1")))
          const { run, epoch } = yield* leased()
          yield* store.append(run, epoch, one(started(key)))
          const e = yield* Effect.flip(store.append(run, epoch, [admitted("order-1"), started(key)]))
          assertError(e, new DuplicateEffect({ run, effect: key }))
          assert.strictEqual((yield* store.head(run)).seq, 1)
          assert.deepStrictEqual(yield* store.admittedAs("order-1"), Option.some(holder.run))
        }),
      ))

    test("records after an EffectStarted for the same key (done, failed) are not duplicates", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const key = effectKey()
          const { run, epoch } = yield* leased()
          const done = entry(
            { kind: "EffectDone", output: { ok: true }, source: "live", spend: { tokens: 1 }, declared: null },
            { effect: key },
          )
          const out = yield* store.append(run, epoch, [started(key), done, done])
          assert.strictEqual(out.length, 3)
        }),
      ))

    test("no lease, a stale epoch and an invented future epoch are Fenced", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const unleased = generateRunId()
          assertError(
            yield* Effect.flip(store.append(unleased, Epoch.make(1), one(note("x")))),
            new Fenced({ run: unleased, held: 1, current: 0 }),
          )
          const { run, epoch } = yield* leased("a")
          yield* store.releaseLease(run, epoch)
          const second = yield* store.acquire(run, "b", 60)
          assertError(
            yield* Effect.flip(store.append(run, epoch, one(note("stale")))),
            new Fenced({ run, held: 1, current: 2 }),
          )
          assertError(
            yield* Effect.flip(store.append(run, Epoch.make(3), one(note("future")))),
            new Fenced({ run, held: 3, current: 2 }),
          )
          assert.strictEqual((yield* store.head(run)).seq, 0)
          const [r] = yield* store.append(run, second.epoch, one(note("current")))
          assert.strictEqual(r?.seq, 1)
        }),
      ))

    test("an append to a sealed run is RunSealed whatever the epoch, and the head does not move", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* written(2)
          const sealedHead = yield* store.seal(run, epoch, "succeeded")
          for (const e of [epoch, Epoch.make(7)]) {
            assertError(
              yield* Effect.flip(store.append(run, e, one(note("late")))),
              new RunSealed({ run, outcome: "succeeded" }),
            )
          }
          assert.deepStrictEqual(yield* store.head(run), { seq: 2, hash: sealedHead })
        }),
      ))
  })

  describe("read", () => {
    test("records with seq >= from, ascending, exactly as append returned them", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, records } = yield* written(4, { case: generateCaseId(), step: 2 })
          assert.deepStrictEqual(yield* store.read(run, 1), records)
          assert.deepStrictEqual(yield* store.read(run, 0), records)
          assert.deepStrictEqual(yield* store.read(run, 3), records.slice(2))
          assert.deepStrictEqual(yield* store.read(run, 5), [])
        }),
      ))

    test("empty for an unwritten run", () =>
      asFreshTenant(
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* (yield* JournalStore).read(generateRunId(), 1), [])
        }),
      ))
  })

  describe("head", () => {
    test("the last record's seq and hash; {0, ZERO} for an unwritten run", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          assert.deepStrictEqual(yield* store.head(generateRunId()), { seq: 0, hash: Digest.ZERO })
          const { run, records } = yield* written(3)
          assert.deepStrictEqual(yield* store.head(run), { seq: 3, hash: records[2]?.hash })
        }),
      ))
  })

  describe("verify", () => {
    test("an intact chain verifies to its head; an unwritten run to {0, ZERO}", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run } = yield* written(3)
          assert.deepStrictEqual(yield* store.verify(run), yield* store.head(run))
          assert.deepStrictEqual(yield* store.verify(generateRunId()), { seq: 0, hash: Digest.ZERO })
        }),
      ))
  })
}
