/**
 * §6.7 `viewRecords`: the run's last record and the records its policy decisions are read from,
 * and nothing else of a journal many times longer (allowed effects, boundaries, notes, a payload
 * that merely looks like the worklist's answer, another step's announcements after an open
 * approval).
 */
import { describe } from "@effect/vitest"
import { Effect } from "effect"
import type { EffectKey } from "../../../src/domain/EffectKey.js"
import { generateRunId } from "../../../src/domain/Ids.js"
import type * as Journal from "../../../src/domain/Journal.js"
import type { Json } from "../../../src/domain/Json.js"
import { WORKLIST_SOURCE } from "../../../src/runtime/Worklist.js"
import { JournalStore } from "../../../src/services/JournalStore.js"
import { assert } from "../../support/Assert.js"
import { asFreshTenant } from "../../support/Backend.js"
import { effectKey, entry, leased, note, started, type Tester } from "./Fixtures.js"

const done = (effect: EffectKey, step: number, source: string, output: Json) =>
  entry({ kind: "EffectDone", output, source, spend: {}, declared: "untrusted" }, { effect, step })

const approval = (effect: EffectKey, step: number) =>
  entry({ kind: "Note", text: JSON.stringify({ approval: ["reviewer"], reason: "eyes" }) }, { effect, step })

/** An allowed effect of `step`, announced and done: what the view never reads. */
const allowed = (step: number, output: Json = { ok: true }) => {
  const key = effectKey()
  return [started(key, { step }), done(key, step, "tool", output)]
}

const filler = (n: number, step: number) =>
  Array.from({ length: n }, (_, i) => (i % 3 === 0 ? [note(`boundary ${i}`, { step })] : allowed(step))).flat()

export const view = (test: Tester) => {
  describe("viewRecords", () => {
    test("answers the last record and the decision records of a long journal, in seq order, and nothing else", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const write = (batch: ReadonlyArray<Journal.Append>) =>
            store.append(run, epoch, batch as [Journal.Append, ...Array<Journal.Append>])
          const k1 = effectKey()
          const w1 = effectKey()
          const k3 = effectKey()
          const w3 = effectKey()
          const denied = effectKey()
          const released = effectKey()
          yield* write(filler(90, 0))
          // An approval in step 1, decided by the worklist; its effect then announced and done.
          const [note1, wait1] = yield* write([approval(k1, 1), started(w1, { step: 1 })])
          yield* write(filler(60, 2))
          const [answer1, action1] = yield* write([
            done(w1, 1, WORKLIST_SOURCE, { approved: true, actor: "rita", reason: "fine" }),
            started(k1, { step: 1 }),
            done(k1, 1, "tool", "sent"),
          ])
          // A payload holding the worklist's bytes is not the worklist's answer.
          yield* write(allowed(2, { source: WORKLIST_SOURCE }))
          const [refused, release] = yield* write([
            entry({ kind: "PolicyDenied", reason: "blocked", action: "send", resource: "run" }, { effect: denied }),
            entry(
              { kind: "Released", releaser: "x", release: "why", labels: ["input:test"], value_digest: "d" },
              { effect: released },
            ),
          ])
          yield* write(filler(60, 2))
          // An approval in step 3 still open: another step's announcements after its Note are not its wait.
          const [note3] = yield* write([approval(k3, 3)])
          yield* write(filler(30, 4))
          const [wait3] = yield* write([started(w3, { step: 3 })])
          yield* write(filler(30, 4))
          const [last] = yield* write([
            entry({
              kind: "RunSuspended",
              reason: { reason: "awaiting_event", kind: "agentplane.task.decided", correlation: [], until: null },
            }),
          ])
          const full = yield* store.read(run, 1)
          const expected = [note1, wait1, answer1, action1, refused, release, note3, wait3, last].map((r) => r?.seq)
          const answer = yield* store.viewRecords(run)
          assert.deepStrictEqual(
            answer.map((r) => r.seq),
            expected,
          )
          // Read back as `read` reads them, and a sliver of the journal.
          assert.deepStrictEqual(
            answer,
            full.filter((r) => expected.includes(r.seq)),
          )
          assert.isTrue(full.length > 20 * answer.length)
        }),
      ))

    test("once the approval is decided, the step's later announcements are not read; an unwritten run answers nothing", () =>
      asFreshTenant(
        Effect.gen(function* () {
          const store = yield* JournalStore
          const { run, epoch } = yield* leased()
          const k = effectKey()
          const w = effectKey()
          const [n, s] = yield* store.append(run, epoch, [approval(k, 0), started(w, { step: 0 })])
          yield* store.append(run, epoch, filler(10, 0) as never)
          const [d] = yield* store.append(run, epoch, [
            done(w, 0, WORKLIST_SOURCE, { approved: false, actor: "sam", reason: "no" }),
          ])
          const after = yield* store.append(run, epoch, [...filler(10, 0), note("end")] as never)
          assert.deepStrictEqual(
            (yield* store.viewRecords(run)).map((r) => r.seq),
            [n?.seq, s?.seq, d?.seq, after[after.length - 1]?.seq],
          )
          assert.deepStrictEqual(yield* store.viewRecords(generateRunId()), [])
        }),
      ))
  })
}
