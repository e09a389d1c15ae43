/**
 * A wait's boundaries under a real `kill -9` (§7.6, §7.9, §7.10): a child process dies right
 * after a run's subscription is durable (before it journals RunSuspended, its lease still held),
 * or right after a wake-up's first commit (the event's answer with the act's announcement, the
 * act not yet performed). This process then recovers as an instance beside it would: the sender
 * retries its event and the sweeper ticks until the run is sealed. The run succeeds with its wait
 * answered once, its act performed once (counted in a file the journal knows nothing of), its
 * chain intact and no wait left. On a SQLite file and on PostgreSQL.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { Clock, Effect, Option, Schedule } from "effect"
import { expect, inject } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import { Timestamp } from "../../src/domain/Time.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import * as Sweeper from "../../src/runtime/Sweeper.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { EventStore } from "../../src/services/EventStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Definitions from "./Definitions.js"
import * as WaitDefinitions from "./WaitDefinitions.js"

const ROOT = join(import.meta.dirname, "..", "..")
const CHILD = join(import.meta.dirname, "WaitChild.ts")

/** Runs the child and resolves once it died by SIGKILL having announced the boundary. */
const dieAt = (args: WaitDefinitions.WaitChildArgs): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stdout = ""
    let stderr = ""
    const guard = setTimeout(() => child.kill("SIGKILL"), 45_000)
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.on("error", reject)
    child.on("exit", (code, signal) => {
      clearTimeout(guard)
      if (signal === "SIGKILL" && stdout.includes(`dying at ${args.boundary}`)) resolve()
      else reject(new Error(`child ended (code ${code}, signal ${signal}), out ${stdout}: ${stderr}`))
    })
  })

const acts = (file: string): number =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line === "ship").length
    : 0

const sweepNow = Effect.flatMap(Clock.currentTimeMillis, (ms) => Sweeper.sweep(Timestamp.make(Math.floor(ms / 1000))))

const suite = (label: string, target: () => Definitions.Target) =>
  describe(label, () => {
    for (const boundary of ["subscribed", "answered"] as const) {
      it.live(
        `killed right after ${boundary === "subscribed" ? "the subscription is durable" : "the wake-up's first commit"}: recovered, the run resumes once and acts once`,
        () => {
          const tenant = `t-waitkill-${randomUUID()}`
          const file = join(inject("scratchDir"), `waitkill-${randomUUID()}.txt`)
          const order = `o-${randomUUID()}`
          const where = target()
          const def = WaitDefinitions.definition(file)
          const fresh = TestRuntime.layer([def], { stores: Definitions.stores(where), owner: "fresh-process" })
          return Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const journal = yield* JournalStore
            if (boundary === "answered") {
              const first = yield* rt.runCorrelated(def, Run.labeled({ order }, "test"), WaitDefinitions.CASE_KIND, [
                WaitDefinitions.keyOf(order),
              ])
              expect(first.status._tag).toBe("Suspended")
            }
            yield* Effect.promise(() => dieAt({ target: where, tenant, acts: file, order, boundary }))
            expect(acts(file)).toBe(0)
            const kase = yield* Effect.flatMap(CaseStore, (c) => c.correlate([WaitDefinitions.keyOf(order)]))
            const found = yield* Effect.flatMap(CaseStore, (c) => c.case(Option.getOrThrow(kase)))
            const run = Option.getOrThrow(found).runs[0] as RunId
            // Killed where intended: the journal ends at the wait's announcement (no RunSuspended),
            // or at the answer and the act's announcement (the act's outcome never written).
            const left = (yield* journal.read(run, 1)).map((r) => r.kind.kind)
            expect(left.slice(-2)).toEqual(
              boundary === "subscribed" ? ["DeadlineRegistered", "EffectStarted"] : ["EffectDone", "EffectStarted"],
            )
            expect(left.includes("RunSuspended")).toBe(boundary === "answered")
            // The sender retries (a duplicate once it was accepted), the sweeper ticks.
            yield* Effect.gen(function* () {
              yield* rt.deliver(WaitDefinitions.paid(order))
              yield* sweepNow
              yield* rt.idle
              const sealed = (yield* journal.read(run, 1)).at(-1)?.kind
              if (sealed?.kind !== "RunSealed") return yield* Effect.fail("not sealed yet")
            }).pipe(Effect.retry(Schedule.spaced("250 millis").pipe(Schedule.upTo("55 seconds"))))
            const records = yield* journal.read(run, 1)
            expect((yield* journal.verify(run)).seq).toBe(records.length)
            expect(records.at(-1)?.kind).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
            const waits = records.filter(
              (r) =>
                r.kind.kind === "EffectStarted" &&
                (r.kind.descriptor as { readonly kind?: string }).kind === "event.await",
            )
            expect(waits).toHaveLength(1)
            const key = Option.getOrThrow(waits[0]?.effectKey ?? Option.none())
            const answers = records.filter((r) => r.kind.kind === "EffectDone" && Option.contains(r.effectKey, key))
            expect(answers).toHaveLength(1)
            expect(acts(file)).toBe(1)
            expect((yield* Effect.flatMap(EventStore, (e) => e.waiting(1000))).filter((s) => s.run === run)).toEqual([])
          }).pipe(Effect.provideService(Tenant, TenantId.make(tenant)), Effect.provide(fresh))
        },
        90_000,
      )
    }
  })

suite("a wait killed at its boundaries on a SQLite file", () => ({
  _tag: "sqlite",
  filename: join(inject("scratchDir"), `waitkill-${randomUUID()}.db`),
}))
suite("a wait killed at its boundaries on PostgreSQL", () => ({ _tag: "pg", url: inject("pgUrl") }))
