/**
 * Two processes racing `CaseStore.correlateOrOpen` for one fresh key on one SQLite file. The
 * SQLite store runs a verb's statements without yielding, so two fibers of one process never
 * interleave inside it: only a second process can slip between the verb's first lookup (a plain
 * read) and its write transaction, which is why the write looks the key up again under the write
 * lock. Round after round both children (`CorrelateChild.ts`) are given a new key and a start
 * instant, and call at the same millisecond; per key one case exists, both got its id, one
 * opened it and the other found it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { expect, inject } from "vitest"
import type { Case } from "../../src/domain/Case.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { CaseStore } from "../../src/services/CaseStore.js"
import type { CorrelateArgs } from "./CorrelateChild.js"

const ROOT = join(import.meta.dirname, "..", "..")
const CHILD = join(import.meta.dirname, "CorrelateChild.ts")
/** Keys raced, one per round. */
const ROUNDS = 200
/** How far ahead of the parent's clock each round's start instant is set, so both children have read their line. */
const LEAD_MS = 15
const NAMESPACE = "race"

interface Answer {
  readonly tag: string
  readonly rest: string
}

/** A child process answering one line per round, awaited by the round's key value. */
interface Racer {
  readonly send: (value: string, at: number) => Promise<Answer>
  readonly ready: Promise<void>
  readonly exited: Promise<number | null>
  readonly child: ChildProcessWithoutNullStreams
}

const start = (args: CorrelateArgs): Racer => {
  // Two processes on one SQLite file wait for each other's write lock: a minute, not the default
  // 5 s, so a loaded machine's slow fsync is not mistaken for a lost race.
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, JSON.stringify(args)], {
    cwd: ROOT,
    env: { ...process.env, AGENTPLANE_SQLITE_BUSY_TIMEOUT: "60" },
  })
  const waiting = new Map<string, (a: Answer) => void>()
  let stderr = ""
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const ready = new Promise<void>((resolve, reject) => {
    child.on("error", reject)
    void exited.then((code) => reject(new Error(`child ${args.name} exited (${code}) before ready: ${stderr}`)))
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line === "ready") return resolve()
      const [value = "", tag = "", ...rest] = line.split(" ")
      waiting.get(value)?.({ tag, rest: rest.join(" ") })
      waiting.delete(value)
    })
  })
  const send = (value: string, at: number) =>
    new Promise<Answer>((resolve, reject) => {
      waiting.set(value, resolve)
      void exited.then((code) => reject(new Error(`child ${args.name} exited (${code}) mid-race: ${stderr}`)))
      child.stdin.write(`${value} ${at}\n`)
    })
  return { send, ready, exited, child }
}

/** Every case of the tenant, paged. */
const allCases = Effect.gen(function* () {
  const store = yield* CaseStore
  const all: Array<Case> = []
  for (;;) {
    const last = all[all.length - 1]
    const page = yield* store.cases(last === undefined ? Option.none() : Option.some(last.id), 500)
    all.push(...page)
    if (page.length < 500) return all
  }
})

describe("two processes on one SQLite file", () => {
  it.live(
    "racing correlateOrOpen for one fresh key, they get one case: one opened it, the other found it",
    () =>
      Effect.gen(function* () {
        const filename = join(inject("scratchDir"), `correlate-${randomUUID()}.db`)
        const tenant = `t-correlate-${randomUUID()}`
        const stores = SqliteBackend.layer({ filename })
        // Migrated here first, so the children never race each other's migrations.
        yield* Effect.provide(Effect.void, stores)
        const racers = ["a", "b"].map((name) => start({ filename, tenant, name, namespace: NAMESPACE }))
        const rounds = yield* Effect.promise(async () => {
          try {
            await Promise.all(racers.map((r) => r.ready))
            const answers: Array<{ readonly value: string; readonly got: ReadonlyArray<Answer> }> = []
            for (let i = 0; i < ROUNDS; i++) {
              const value = `k${i}-${randomUUID().slice(0, 8)}`
              const at = Date.now() + LEAD_MS
              answers.push({ value, got: await Promise.all(racers.map((r) => r.send(value, at))) })
            }
            for (const r of racers) r.child.stdin.end()
            const codes = await Promise.all(racers.map((r) => r.exited))
            return { answers, codes }
          } finally {
            for (const r of racers) if (r.child.exitCode === null) r.child.kill("SIGKILL")
          }
        })
        expect(rounds.codes).toEqual([0, 0])
        // Every round that did not end in exactly one open and one find of the same case.
        const wrong = rounds.answers.filter(({ got: [a, b] }) => {
          const tags = [a?.tag, b?.tag].sort()
          return tags[0] !== "Attached" || tags[1] !== "Opened" || a?.rest !== b?.rest
        })
        expect(wrong).toEqual([])
        const cases = yield* allCases.pipe(Effect.provideService(Tenant, TenantId.make(tenant)), Effect.provide(stores))
        const holders = new Map<string, Array<string>>()
        for (const c of cases) {
          for (const k of c.correlation) {
            if (k.namespace === NAMESPACE) holders.set(k.value, [...(holders.get(k.value) ?? []), c.id])
          }
        }
        expect(cases).toHaveLength(ROUNDS)
        for (const { value, got } of rounds.answers) expect(holders.get(value)).toEqual([got[0]?.rest])
      }),
    120_000,
  )
})
