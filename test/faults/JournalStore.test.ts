/**
 * Fault injection on the JournalStore, PostgreSQL only (the cut is a trigger that terminates the
 * backend; see test/support/Faults.ts): a batch is appended whole with its derived indexes or not
 * at all, and a seal or a lease lands whole or not at all.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { describe, layer } from "@effect/vitest"
import { Effect, Fiber, Option, Schedule } from "effect"
import { inject } from "vitest"
import * as Digest from "../../src/domain/Digest.js"
import { EffectKey } from "../../src/domain/EffectKey.js"
import { type CaseId, generateCaseId, generateRunId, type RunId, StepId } from "../../src/domain/Ids.js"
import * as Journal from "../../src/domain/Journal.js"
import { Tenant } from "../../src/domain/Tenant.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import { assert } from "../support/Assert.js"
import { asFreshTenant } from "../support/Backend.js"
import * as Faults from "../support/Faults.js"

const entry = (kind: Journal.Kind, kase?: CaseId, effect?: EffectKey) =>
  Journal.Append.make({
    case: Option.fromNullable(kase),
    step: StepId.make(1),
    effectKey: Option.fromNullable(effect),
    kind,
  })

const note = (text: string, kase?: CaseId) => entry({ kind: "Note", text }, kase)

const admitted = (key: string) =>
  entry({
    kind: "RunAdmitted",
    capability: "refunds",
    input: { amount: 12 },
    input_label: "internal",
    policy_bundle: "bundle-1",
    canon: 1,
    idempotency_key: key,
  })

const started = (effect: EffectKey, kase: CaseId) =>
  entry(
    {
      kind: "EffectStarted",
      descriptor: { tool: "mail.send" },
      recovery: "retry",
      mutates: true,
      attempt: 1,
      backoff_ms: 0,
      outbound_label: "public",
    },
    kase,
    effect,
  )

const concluded = entry({ kind: "RunSealed", outcome: "succeeded", chain_head: Digest.ZERO })

/** A run leased to one worker, with one record written. */
const begun = (run: RunId) =>
  Effect.flatMap(JournalStore, (store) =>
    Effect.gen(function* () {
      const lease = yield* store.acquire(run, "worker", 600)
      yield* store.append(run, lease.epoch, [note("first")])
      return lease.epoch
    }),
  )

/** Everything the journal shows of a run through its reads and indexes. */
const shown = (run: RunId, key: string, kase: CaseId) =>
  Effect.flatMap(JournalStore, (store) =>
    Effect.all([
      store.head(run),
      store.read(run, 1),
      store.verify(run),
      store.admittedAs(key),
      store.runsByOutcome("succeeded", 10),
      store.caseHistory(kase, 10),
      Effect.map(store.recentRuns(Option.none(), 10), (runs) => runs.map((r) => [r.run, r.case])),
    ]),
  )

const scenarios = [
  Faults.scenario(
    "append of a keyed admission, an effect start, a note and a conclusion",
    [
      Faults.before("journal", "INSERT"),
      Faults.after("journal", "INSERT", "NEW.seq = 2"),
      Faults.before("run_admission", "INSERT"),
      Faults.after("run_admission", "INSERT"),
      Faults.before("journal", "INSERT", "NEW.seq = 4"),
      Faults.before("run_outcome", "INSERT"),
      Faults.after("run_outcome", "INSERT"),
      Faults.before("run_activity", "INSERT"),
      Faults.after("run_activity", "UPDATE"),
      Faults.atCommit("journal", "INSERT"),
    ],
    () => {
      const run = generateRunId()
      const kase = generateCaseId()
      const key = `order-${randomBytes(4).toString("hex")}`
      const effect = EffectKey.make(randomBytes(32).toString("hex"))
      return {
        setup: begun(run),
        run: (epoch) =>
          Effect.flatMap(JournalStore, (store) =>
            store.append(run, epoch, [admitted(key), started(effect, kase), note("sent", kase), concluded]),
          ),
        observe: () => shown(run, key, kase),
        probe: (epoch) => Effect.flatMap(JournalStore, (store) => store.append(run, epoch, [note("after")])),
      }
    },
  ),
  Faults.scenario(
    // `begun` wrote the run's first record, so the store remembers its head: on pg this append
    // is the one guarded statement with no transaction around it.
    "append of two notes on a remembered head",
    [
      Faults.before("journal", "INSERT"),
      Faults.before("journal", "INSERT", "NEW.seq = 3"),
      Faults.after("journal", "INSERT"),
      Faults.after("run_activity", "UPDATE"),
      Faults.atCommit("journal", "INSERT"),
    ],
    () => {
      const run = generateRunId()
      const kase = generateCaseId()
      return {
        setup: begun(run),
        run: (epoch) =>
          Effect.flatMap(JournalStore, (store) => store.append(run, epoch, [note("one", kase), note("two", kase)])),
        observe: () => shown(run, "none", kase),
        probe: (epoch) => Effect.flatMap(JournalStore, (store) => store.append(run, epoch, [note("after")])),
      }
    },
  ),
  Faults.scenario(
    // Again on a remembered head: on pg the last batch and the seal (release, outcome, seal row)
    // are one autocommitted statement.
    "seal with a last batch on a remembered head",
    [
      Faults.before("journal", "INSERT"),
      Faults.after("journal", "INSERT"),
      Faults.after("run_lease", "UPDATE"),
      Faults.before("run_outcome", "INSERT"),
      // The tenant's first seal inserts its log counter (`LogSequence`): the position is taken
      // in the same statement, so a kill after it leaves no position spent.
      Faults.before("log_sequence", "INSERT"),
      Faults.after("log_sequence", "INSERT"),
      Faults.before("run_seal", "INSERT"),
      Faults.after("run_seal", "INSERT"),
      Faults.atCommit("run_seal", "INSERT"),
    ],
    () => {
      const run = generateRunId()
      const kase = generateCaseId()
      return {
        setup: begun(run),
        run: (epoch) =>
          Effect.flatMap(JournalStore, (store) => store.seal(run, epoch, "succeeded", [note("last", kase), concluded])),
        observe: () => shown(run, "none", kase),
        probe: (epoch) => Effect.flatMap(JournalStore, (store) => store.append(run, epoch, [note("late")])),
      }
    },
  ),
  Faults.scenario(
    "seal freezing a run",
    [
      Faults.after("log_sequence", "INSERT"),
      Faults.before("run_seal", "INSERT"),
      Faults.after("run_seal", "INSERT"),
      Faults.atCommit("run_seal", "INSERT"),
    ],
    () => {
      const run = generateRunId()
      return {
        setup: begun(run),
        run: (epoch) => Effect.flatMap(JournalStore, (store) => store.seal(run, epoch, "succeeded")),
        observe: () => shown(run, "none", generateCaseId()),
        probe: (epoch) => Effect.flatMap(JournalStore, (store) => store.append(run, epoch, [note("late")])),
      }
    },
  ),
  Faults.scenario(
    "acquire taking a released lease at the next epoch",
    [Faults.before("run_lease", "UPDATE"), Faults.after("run_lease", "UPDATE"), Faults.atCommit("run_lease", "UPDATE")],
    () => {
      const run = generateRunId()
      return {
        setup: Effect.flatMap(JournalStore, (store) =>
          Effect.flatMap(store.acquire(run, "worker", 600), (lease) => store.releaseLease(run, lease.epoch)),
        ),
        run: () => Effect.flatMap(JournalStore, (store) => store.acquire(run, "other", 600)),
        observe: () => Effect.flatMap(JournalStore, (store) => store.abandonedRuns(10)),
        // The fault must not have spent an epoch: the next holder fences at exactly 2.
        probe: () =>
          Effect.flatMap(JournalStore, (store) => store.append(run, 2 as Journal.Lease["epoch"], [note("x")])),
        volatile: ["expiresAt", "remainingSecs"],
      }
    },
  ),
]

/**
 * A new run's opening append (`AppendOptions.open`): on pg one autocommitted statement that checks
 * the halt, claims the admission key, takes the lease at epoch 1 and writes the first records.
 */
const opening = Faults.scenario(
  "opening append of a keyed run (halt, key, lease and first records in one statement)",
  [
    Faults.before("run_admission", "INSERT"),
    Faults.before("run_lease", "INSERT"),
    Faults.before("journal", "INSERT", "NEW.seq = 2"),
    Faults.after("journal", "INSERT"),
    Faults.before("run_activity", "INSERT"),
    Faults.atCommit("journal", "INSERT"),
  ],
  () => {
    const run = generateRunId()
    const kase = generateCaseId()
    const key = `order-${randomBytes(4).toString("hex")}`
    const effect = EffectKey.make(randomBytes(32).toString("hex"))
    return {
      setup: Effect.void,
      run: () =>
        Effect.flatMap(JournalStore, (store) =>
          store.append(run, 1 as Journal.Lease["epoch"], [admitted(key), started(effect, kase)], undefined, {
            open: { owner: "worker", ttlSecs: 600 },
          }),
        ),
      observe: () => shown(run, key, kase),
      probe: () =>
        Effect.flatMap(JournalStore, (store) => store.append(run, 1 as Journal.Lease["epoch"], [note("after")])),
      volatile: ["remainingSecs"],
    }
  },
)

describe("faults: JournalStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, [...scenarios, opening])

    // The one-statement writes again, each sent in one shared send with another statement
    // (`SharedCommit`): the kill ends the session the two share, and both must fail whole.
    describe("in a shared send", () => {
      Faults.exercise(
        it.effect,
        [opening, ...scenarios.filter((s) => s.name.includes("remembered head"))],
        Faults.inCompany,
      )
    })

    // The append on a remembered head is one statement with no state read before it; it must
    // still hold the lease row while it writes, or a takeover granted meanwhile would be followed
    // by a record of the old epoch. A trigger marks a sequence (sequences are not transactional,
    // so the mark is seen at once) and then holds the append's insert; the release and the new
    // acquire are sent once the mark is seen, and must wait for the append.
    it.effect(
      "a remembered head's append holds the lease row while it writes: a takeover sent meanwhile waits for it",
      () =>
        asFreshTenant(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const store = yield* JournalStore
            const tenant = yield* Tenant
            const run = generateRunId()
            const epoch = yield* begun(run)
            const name = `slow_${randomBytes(6).toString("hex")}`
            yield* Effect.acquireRelease(
              Effect.orDie(
                Effect.all([
                  sql.unsafe(`CREATE SEQUENCE ${name}`),
                  sql.unsafe(
                    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM setval('${name}', 1); PERFORM pg_sleep(1.5); RETURN NEW; END $$`,
                  ),
                  sql.unsafe(
                    `CREATE TRIGGER ${name} BEFORE INSERT ON journal FOR EACH ROW WHEN (NEW.tenant = '${tenant}') EXECUTE FUNCTION ${name}()`,
                  ),
                ]),
              ),
              () =>
                Effect.orDie(
                  Effect.all([
                    sql.unsafe(`DROP TRIGGER IF EXISTS ${name} ON journal`),
                    sql.unsafe(`DROP FUNCTION IF EXISTS ${name}()`),
                    sql.unsafe(`DROP SEQUENCE IF EXISTS ${name}`),
                  ]),
                ),
            )
            const order: Array<string> = []
            const slow = yield* Effect.fork(
              Effect.tap(store.append(run, epoch, [note("slow")]), () => Effect.sync(() => order.push("append"))),
            )
            // The append is inside its insert, holding what it holds, once the trigger has marked.
            yield* sql`SELECT is_called FROM ${sql.literal(name)}`.pipe(
              Effect.orDie,
              Effect.filterOrFail(
                ([row]) => row?.is_called === true,
                () => "the append never reached its insert",
              ),
              Effect.retry({ times: 2_000, schedule: Schedule.spaced("10 millis") }),
            )
            const taken = yield* Effect.zipRight(store.releaseLease(run, epoch), store.acquire(run, "taker", 600))
            order.push("acquire")
            const [written] = yield* Fiber.join(slow)
            assert.deepStrictEqual(order, ["append", "acquire"])
            assert.strictEqual(written?.seq, 2)
            assert.strictEqual(taken.epoch, epoch + 1)
            assert.strictEqual((yield* store.verify(run)).seq, 2)
          }),
        ).pipe(Effect.scoped),
    )
  })
})
