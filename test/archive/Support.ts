/**
 * What the archive tests share: a tenant seeded through the stores with every shape the export
 * carries, its export as lines, and a snapshot of every read path to compare two tenants by.
 */
import { Chunk, Effect, Option, Stream } from "effect"
import * as Export from "../../src/archive/Export.js"
import type { CaseStatus } from "../../src/domain/Case.js"
import * as Digest from "../../src/domain/Digest.js"
import type { CaseId, RunId } from "../../src/domain/Ids.js"
import type * as Journal from "../../src/domain/Journal.js"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as CaseFx from "../conformance/case/Fixtures.js"
import * as Fx from "../conformance/journal/Fixtures.js"

export const NOW = CaseFx.at(5_000)

const STATUSES: ReadonlyArray<CaseStatus> = ["open", "awaiting_external", "awaiting_human", "escalated", "closed"]
const OUTCOMES: ReadonlyArray<Journal.RunOutcome> = [
  "succeeded",
  "failed",
  "quarantined",
  "cancelled",
  "compensated",
  "exhausted",
  "swept",
]

export interface Seeded {
  readonly cases: ReadonlyArray<CaseId>
  readonly runs: ReadonlyArray<RunId>
  readonly keys: ReadonlyArray<string>
}

/**
 * A tenant with an open case (state, deadlines, a blob, two runs), a closed one, a run sealed
 * succeeded with an admission key, a failed run left open, a long open run (over a page), a
 * sealed sweep-evidence run and an attested-free run without a case. `long` sets the long run's length.
 */
export const seed = (long = 600) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const suffix = Math.random().toString(36).slice(2)
    const open = yield* CaseFx.open([CaseFx.key("claim", `C-${suffix}`), CaseFx.key("mail", `m-${suffix}`)], 1_000)
    yield* cases.putState(open, 0 as never, { amount: 40, notes: ["é", "\u2028"] })
    yield* cases.registerDeadline(CaseFx.deadline(open, "reply", 6_000, "pending", 4_000))
    yield* cases.registerDeadline(CaseFx.deadline(open, "ack", 2_000, "met"))
    yield* cases.linkBlob(open, Digest.of(`blob-b-${suffix}`), CaseFx.at(1_100))
    yield* cases.linkBlob(open, Digest.of(`blob-a-${suffix}`), CaseFx.at(1_200))
    yield* cases.setStatus(open, "awaiting_human")
    const closed = yield* CaseFx.open([CaseFx.key("claim", `D-${suffix}`)], 900)
    yield* cases.close(closed)

    const key = `idem-${suffix}`
    // Runs are made in id order and concluded in that order, so runsByOutcome's order survives too.
    const sealed = yield* Fx.leased()
    yield* cases.attachRun(open, sealed.run)
    yield* journal.append(sealed.run, sealed.epoch, [
      Fx.admitted(key),
      Fx.note("assess", { case: open }),
      Fx.started(Fx.effectKey(), { case: open, step: 1 }),
    ])
    yield* journal.seal(sealed.run, sealed.epoch, "succeeded", [Fx.concluded("succeeded")])

    const failed = yield* Fx.leased()
    yield* cases.attachRun(open, failed.run)
    yield* journal.append(failed.run, failed.epoch, [Fx.note("try", { case: open }), Fx.concluded("failed")])

    const longRun = yield* Fx.written(long)

    const swept = yield* Fx.leased()
    yield* journal.append(swept.run, swept.epoch, [
      Fx.entry({ kind: "Swept", subject: open, action: "deadline_warned", detail: { name: "reply" } }),
    ])
    yield* journal.seal(swept.run, swept.epoch, "swept")

    return {
      cases: [open, closed],
      runs: [sealed.run, failed.run, longRun.run, swept.run],
      keys: [key],
    } satisfies Seeded
  })

/** The tenant's export as lines. */
export const exportLines = Stream.runCollect(Export.lines()).pipe(Effect.map(Chunk.toReadonlyArray))

/** Every read path the acceptance names, as plain data (raw as hex), for one tenant. */
export const snapshot = (seeded: Seeded) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    const cases = yield* CaseStore
    const perCase = yield* Effect.forEach(seeded.cases, (id) =>
      Effect.gen(function* () {
        const kase = Option.getOrThrow(yield* cases.case(id))
        return {
          case: kase,
          correlate: yield* cases.correlate(kase.correlation),
          deadlines: yield* cases.deadlines(id),
          blobs: yield* cases.blobsOf(id),
          history: (yield* journal.caseHistory(id, 10_000)).map(plain),
        }
      }),
    )
    const perRun = yield* Effect.forEach(seeded.runs, (run) =>
      Effect.gen(function* () {
        return {
          read: (yield* journal.read(run, 1)).map(plain),
          head: yield* journal.head(run),
          verify: yield* journal.verify(run),
        }
      }),
    )
    return {
      perCase,
      perRun,
      cases: yield* cases.cases(Option.none(), 1_000),
      byStatus: yield* Effect.forEach(STATUSES, (s) => cases.byStatus(s, 1_000)),
      due: yield* cases.due(NOW, 1_000),
      byOutcome: yield* Effect.forEach(OUTCOMES, (o) => journal.runsByOutcome(o, 1_000)),
      admitted: yield* Effect.forEach(seeded.keys, (k) => journal.admittedAs(k)),
      // Activity times are the restore's (a documented decision): the runs and their cases must match.
      recent: (yield* journal.recentRuns(Option.none(), 1_000))
        .map((r) => ({ run: r.run, case: r.case }))
        .sort((a, b) => (a.run < b.run ? -1 : 1)),
    }
  })

const plain = (r: Journal.Record) => ({ ...r, raw: Buffer.from(r.raw).toString("hex") })

export const as =
  (tenant: TenantId) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.provideService(effect, Tenant, tenant)
