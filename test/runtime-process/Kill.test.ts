/**
 * §7.1 recovery after a real process death: a child Node process admits a `Retry` run, a
 * `RequiresOperator` run and a run whose first act is a read; each dies inside its act
 * (announced, acted, not recorded) under `kill -9`, and once the dead child's lease lapses this
 * process resumes them with a fresh runtime. The acts are counted in a file the journal knows
 * nothing of: the Retry act and the read run once more, the RequiresOperator act never again and
 * its run is quarantined. The read's run is not lost: its admission and announcement were durable
 * before it read (§7.11). On a SQLite file (left with the dead process's WAL) and on PostgreSQL.
 */
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { Effect, Option, Schedule } from "effect"
import { expect, inject } from "vitest"
import * as Run from "../../src/domain/Run.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as Runtime from "../../src/runtime/Runtime.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import * as TestRuntime from "../../src/testing/TestRuntime.js"
import * as Definitions from "./Definitions.js"

const ROOT = join(import.meta.dirname, "..", "..")
const CHILD = join(import.meta.dirname, "Child.ts")

/** Starts the child on `args`, waits until every act has signalled, and SIGKILLs it right there. */
const killInsideActs = (args: Definitions.ChildArgs): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    })
    const acted = new Set<string>()
    let stdout = ""
    let stderr = ""
    const guard = setTimeout(() => child.kill("SIGKILL"), 45_000)
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      for (const line of stdout.split("\n")) if (line.startsWith("acted ")) acted.add(line.slice(6))
      if (Definitions.RECOVERIES.every((name) => acted.has(name))) child.kill("SIGKILL")
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk
    })
    child.on("error", reject)
    child.on("exit", (code, signal) => {
      clearTimeout(guard)
      if (signal === "SIGKILL" && acted.size === Definitions.RECOVERIES.length) resolve()
      else reject(new Error(`child ended (code ${code}, signal ${signal}) after acting ${[...acted]}: ${stderr}`))
    })
  })

const actsOf = (file: string, name: Definitions.Name): number =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line === name).length
    : 0

const suite = (label: string, target: () => Definitions.Target) =>
  describe(label, () => {
    it.live(
      "after kill -9 inside the act, Retry and a first read act once more, RequiresOperator never again, quarantined",
      () =>
        Effect.gen(function* () {
          const tenant = `t-kill-${randomUUID()}`
          const acts = join(inject("scratchDir"), `acts-${randomUUID()}.txt`)
          const where = target()
          yield* Effect.promise(() => killInsideActs({ target: where, tenant, acts }))
          expect(actsOf(acts, "retry")).toBe(1)
          expect(actsOf(acts, "operator")).toBe(1)
          expect(actsOf(acts, "read")).toBe(1)

          const definitions = Definitions.RECOVERIES.map((name) => Definitions.definition(name, { acts, block: false }))
          const fresh = TestRuntime.layer(definitions, { stores: Definitions.stores(where), owner: "fresh-process" })
          yield* Effect.gen(function* () {
            const rt = yield* Runtime.Runtime
            const cases = yield* CaseStore
            const journal = yield* JournalStore
            const runOf = (name: Definitions.Name) =>
              Effect.gen(function* () {
                const kase = yield* cases.correlate([Definitions.keyOf(name)])
                const found = yield* cases.case(Option.getOrThrow(kase))
                const [run] = Option.getOrThrow(found).runs
                if (run === undefined) throw new Error(`the child admitted no ${name} run`)
                return run
              })
            // The dead child's lease lapses within its TTL; until then resume is refused, runs nothing.
            const resumed = (name: Definitions.Name) =>
              Effect.flatMap(runOf(name), (run) =>
                rt.resume(run).pipe(
                  Effect.retry({
                    while: (e) => e._tag === "LeaseHeld",
                    schedule: Schedule.spaced("200 millis"),
                    times: 100,
                  }),
                ),
              )

            const retry = yield* resumed("retry")
            expect(retry.status).toEqual(Run.RunStatus.Succeeded({ output: 40 }))
            expect(actsOf(acts, "retry")).toBe(2)

            const read = yield* resumed("read")
            expect(read.status).toEqual(Run.RunStatus.Succeeded({ output: 40 }))
            expect(actsOf(acts, "read")).toBe(2)

            const operator = yield* resumed("operator")
            expect(operator.status._tag).toBe("Quarantined")
            expect(actsOf(acts, "operator")).toBe(1)
            // Sealed quarantined: an operator decides; no later resume may guess either.
            const again = yield* Effect.flip(rt.resume(operator.run))
            expect(again._tag).toBe("RunClosed")
            expect(actsOf(acts, "operator")).toBe(1)

            for (const run of [retry.run, read.run, operator.run]) {
              const records = yield* journal.read(run, 1)
              expect((yield* journal.verify(run)).seq).toBe(records.length)
              expect(records.at(-1)?.kind.kind).toBe("RunSealed")
            }
          }).pipe(Effect.provideService(Tenant, TenantId.make(tenant)), Effect.provide(fresh))
        }),
      60_000,
    )
  })

suite("kill -9 on a SQLite file", () => ({
  _tag: "sqlite",
  filename: join(inject("scratchDir"), `kill-${randomUUID()}.db`),
}))
suite("kill -9 on PostgreSQL", () => ({ _tag: "pg", url: inject("pgUrl") }))
