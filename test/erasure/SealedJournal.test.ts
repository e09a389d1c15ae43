/**
 * What sealing does at the rows (§9.1), on SQLite with a key ring of its own: the stored bodies
 * and task rows hold ciphertext while every read gives the payload back; the chain is over the
 * stored bytes; an event's payload is sealed in the buffer; a value copied into another case's row does not open there; and after erasure a
 * new write under the case is refused, naming the destroyed scope.
 */
import { randomUUID } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import * as CorrelationKey from "../../src/domain/CorrelationKey.js"
import * as Digest from "../../src/domain/Digest.js"
import { InboundEvent } from "../../src/domain/Event.js"
import { generateRunId } from "../../src/domain/Ids.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { eraseCase } from "../../src/erasure/EraseCase.js"
import * as Sealed from "../../src/erasure/Sealed.js"
import * as SealedStores from "../../src/erasure/SealedStores.js"
import { WORKLIST_SOURCE } from "../../src/runtime/Worklist.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { effectKey, entry, note, one, started } from "../conformance/journal/Fixtures.js"
import { task } from "../conformance/task/Fixtures.js"
import { assert } from "../support/Assert.js"
import * as Backend from "../support/Backend.js"
import { asFreshTenant } from "../support/Backend.js"
import { at, seed, world } from "./World.js"

const Raw = Schema.Array(Schema.Struct({ raw: Schema.Uint8ArrayFromSelf }))
const Text = Schema.Array(Schema.Struct({ text: Schema.String }))

describe("sealed stores (sqlite)", () => {
  layer(world(Backend.sqlite()), { excludeTestServices: true })((it) => {
    it.effect(
      "rows hold ciphertext; read, readPage and caseHistory give the payload back; the chain is over the stored bytes",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const tenant = yield* Tenant
          const s = yield* seed(`secret-${randomUUID()}`)
          const rows =
            yield* sql`SELECT raw FROM journal WHERE tenant = ${tenant} AND run_id = ${s.run} ORDER BY seq`.pipe(
              Effect.flatMap(Schema.decodeUnknown(Raw)),
            )
          assert.strictEqual(rows.length, 4)
          for (const row of rows) assert.strictEqual(Buffer.from(row.raw).indexOf(s.secret), -1)
          const mentions = (kinds: ReadonlyArray<unknown>) => JSON.stringify(kinds).split(s.secret).length - 1
          const reads = yield* SealedStores.sealing(
            Effect.gen(function* () {
              const journal = yield* JournalStore
              return {
                read: yield* journal.read(s.run, 1),
                page: yield* journal.readPage(s.run, 2, 2),
                history: yield* journal.caseHistory(s.kase, 10),
                head: yield* journal.head(s.run),
                verified: yield* journal.verify(s.run),
              }
            }),
          )
          assert.strictEqual(mentions(reads.read.map((r) => r.kind)), 4)
          assert.deepStrictEqual(
            reads.page.map((r) => r.seq),
            [2, 3],
          )
          assert.strictEqual(mentions(reads.page.map((r) => r.kind)), 2)
          // The admission was written before the run was bound: it is the run's, not the case's.
          assert.strictEqual(mentions(reads.history.map((r) => r.kind)), 3)
          assert.deepStrictEqual(reads.verified, reads.head)
          let prev = Digest.ZERO
          for (const row of rows) prev = Digest.chain(prev, row.raw)
          assert.strictEqual(reads.head.hash, prev)
        }).pipe(asFreshTenant),
    )

    it.effect("viewRecords finds approvals' waits by what sealing leaves in the clear, and opens what it answers", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* Tenant
        const s = yield* seed("view owner")
        const run = generateRunId()
        const [decided, open, wait1, wait2] = [effectKey(), effectKey(), effectKey(), effectKey()]
        const approval = (ek: typeof decided, step: number) =>
          entry(
            { kind: "Note", text: JSON.stringify({ approval: ["reviewer"], reason: "eyes" }) },
            { case: s.kase, effect: ek, step },
          )
        const wait = (ek: typeof decided, step: number) =>
          entry({ ...(started(ek).kind as object), descriptor: { kind: "task.await", ordinal: 1_000_000 } } as never, {
            case: s.kase,
            effect: ek,
            step,
          })
        const reads = yield* SealedStores.sealing(
          Effect.gen(function* () {
            const journal = yield* JournalStore
            const lease = yield* journal.acquire(run, "viewer", 60)
            yield* journal.append(run, lease.epoch, [
              approval(decided, 1),
              wait(wait1, 1),
              entry(
                {
                  kind: "EffectDone",
                  output: { approved: true },
                  source: WORKLIST_SOURCE,
                  spend: null,
                  declared: null,
                },
                { case: s.kase, effect: wait1, step: 1 },
              ),
              started(effectKey(), { case: s.kase, step: 2 }),
              approval(open, 3),
              started(effectKey(), { case: s.kase, step: 2 }),
              wait(wait2, 3),
              note("after", { case: s.kase, step: 2 }),
            ])
            return { view: yield* journal.viewRecords(run), read: yield* journal.read(run, 1) }
          }),
        )
        const rows = yield* sql`SELECT raw FROM journal WHERE tenant = ${tenant} AND run_id = ${run}`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Raw)),
        )
        for (const row of rows) assert.strictEqual(Buffer.from(row.raw).indexOf("task.await"), -1)
        // Both Notes, both waits, the answer and the last record; not step 2's announcements.
        assert.deepStrictEqual(
          reads.view.map((r) => r.seq),
          [1, 2, 3, 5, 7, 8],
        )
        assert.deepStrictEqual(
          reads.view,
          reads.read.filter((r) => [1, 2, 3, 5, 7, 8].includes(r.seq)),
        )
        assert.deepStrictEqual(
          reads.view
            .filter((r) => r.kind.kind === "EffectStarted")
            .map((r) => (r.kind as { descriptor: unknown }).descriptor),
          [
            { kind: "task.await", ordinal: 1_000_000 },
            { kind: "task.await", ordinal: 1_000_000 },
          ],
        )
      }).pipe(asFreshTenant),
    )

    it.effect("a task's justification is sealed in its row and opened on every read", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* Tenant
        const s = yield* seed("task owner")
        const written = task({ case: s.kase })
        const reads = yield* SealedStores.sealing(
          Effect.gen(function* () {
            const tasks = yield* TaskStore
            const opened = yield* tasks.open(written)
            const read = Option.getOrThrow(yield* tasks.task(written.id))
            const forCase = yield* tasks.forCase(s.kase)
            return { opened, read, forCase }
          }),
        )
        const [row] =
          yield* sql`SELECT justification AS text FROM tasks WHERE tenant = ${tenant} AND task_id = ${written.id}`.pipe(
            Effect.flatMap(Schema.decodeUnknown(Text)),
          )
        assert.isFalse(String(row?.text).includes("refund 40 EUR"))
        assert.isFalse(String(row?.text).includes("ticket 17"))
        assert.isTrue(String(row?.text).includes(Sealed.PREFIX))
        assert.deepStrictEqual(reads.opened.justification, written.justification)
        assert.deepStrictEqual(reads.read.justification, written.justification)
        assert.deepStrictEqual(
          reads.forCase.map((t) => t.justification),
          [written.justification],
        )
      }).pipe(asFreshTenant),
    )

    it.effect("a buffered event's payload is sealed in its row and opened by accepted", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tenant = yield* Tenant
        const event = new InboundEvent({
          source: "webhook",
          id: randomUUID(),
          kind: "payment.received",
          correlation: [CorrelationKey.make("invoice", randomUUID())],
          payload: { card: "4111 1111 1111 1111" },
        })
        const read = yield* SealedStores.sealing(
          Effect.gen(function* () {
            const events = yield* EventStore
            yield* events.accept(event, at(1))
            return Option.getOrThrow(yield* events.accepted(event.source, event.id))
          }),
        )
        assert.deepStrictEqual(read.event.payload, event.payload)
        const rows = yield* sql`SELECT payload AS text FROM inbound_events WHERE tenant = ${tenant}`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Text)),
        )
        assert.strictEqual(rows.length, 1)
        assert.isFalse(String(rows[0]?.text).includes("4111"))
        assert.isTrue(String(rows[0]?.text).includes(Sealed.PREFIX))
      }).pipe(asFreshTenant),
    )

    it.effect("a sealed state copied into another case's row does not open there: Corrupt", () =>
      Effect.gen(function* () {
        const a = yield* seed("case a's state")
        const b = yield* seed("case b's state")
        const cases = yield* CaseStore
        const stolen = Option.getOrThrow(yield* cases.case(a.kase)).state
        const target = Option.getOrThrow(yield* cases.case(b.kase))
        // Written through the undecorated store, as a raw copy would be.
        yield* cases.putState(b.kase, target.version, stolen)
        const error = yield* Effect.flip(SealedStores.sealing(Effect.flatMap(CaseStore, (c) => c.case(b.kase))))
        assert.strictEqual(error._tag, "Corrupt")
        assert.match(error.message, new RegExp(`sealed under ${a.kase} was found where ${b.kase} belongs`))
      }).pipe(asFreshTenant),
    )

    it.effect("after erasure a new record under the case is refused, naming the destroyed scope", () =>
      Effect.gen(function* () {
        const s = yield* seed("soon erased")
        const tenant = yield* Tenant
        yield* eraseCase(s.kase, at(9), "customer request")
        const error = yield* Effect.flip(
          SealedStores.sealing(
            Effect.gen(function* () {
              const journal = yield* JournalStore
              return yield* journal.append(s.run, s.epoch, one(note("a late note", { case: s.kase })))
            }),
          ),
        )
        assert.strictEqual(error._tag, "Backend")
        assert.match(error.message, new RegExp(`refusing to write: key scope ${tenant}/${s.kase} was destroyed`))
      }).pipe(asFreshTenant),
    )
  })
})
