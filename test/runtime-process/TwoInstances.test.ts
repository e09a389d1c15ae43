/**
 * Issue 16's two instances on one database: two `agentplane serve` processes on one PostgreSQL,
 * both sweeping every second, serve 200 runs (`Workload.ts`), each waiting on an event, a task
 * or a timer. Half are woken while both live; then six runs are woken on the doomed process, which
 * dies by `kill -9` inside their settle acts (announced, not recorded), and the rest are woken on
 * the survivor, whose sweep recovers the six once their lease lapses (acquire bumps the epoch,
 * fencing the dead owner). Every run ends sealed `succeeded`, each wait is answered exactly once,
 * and no act is applied twice: the six settle acts are sent again with their first key, every
 * other act reached the provider exactly once. On one SQLite file the same workload is served by
 * one process, killed the same way and restarted, and loses nothing.
 */
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { expect, inject } from "vitest"
import type { RunId } from "../../src/domain/Ids.js"
import type * as Journal from "../../src/domain/Journal.js"
import { Tenant, TenantId } from "../../src/domain/Tenant.js"
import * as PgBackend from "../../src/layers/PgBackend.js"
import * as SqliteBackend from "../../src/layers/SqliteBackend.js"
import { JournalStore } from "../../src/services/JournalStore.js"
import type * as Stores from "../../src/services/Stores.js"
import * as Serving from "./Serving.js"
import * as Workload from "./Workload.js"

const RUNS = 200
const HUNG = 6
/**
 * Short, so a dead owner's runs are recovered within seconds; long enough that a loaded box
 * mostly renews in time (on a 2-core box at load 20 a 5 s lease lapsed under live owners often, and 10 s now and then).
 * The phases' bounds are generous for the same reason: they catch a hang, not slowness.
 */
const LEASE_TTL = "20"
/**
 * How long a phase may show no progress at all before it fails: a lapse of a dead (or starved)
 * owner's lease, then sweeps (every second) until the recovery pass reaches the run, with room
 * for a recovery pass that resumes up to 32 runs one after another. Progress, not time, is
 * what a phase is bounded by; the test's own timeout still bounds the whole.
 */
const STALL_MS = 4 * Number(LEASE_TTL) * 1000

/** Starts that reached their wait so far, across every server: progress a stuck start waits on. */
let suspendedStarts = 0
const WAIT_KINDS = new Set(["event.await", "task.await", "timer.sleep"])

interface Started {
  readonly input: Workload.Input
  readonly run: RunId
  /** The task's id, for a run that waits on one. */
  readonly task: Option.Option<string>
}

/**
 * The workload: waits by index modulo 3; the first half's timers due at once, the second half's
 * `secondTimers` seconds on, when the doomed process should be gone; the six hung runs are the
 * first event and task runs of the second half.
 */
const inputs = (now: number, secondTimers: number): ReadonlyArray<Workload.Input> => {
  let hung = 0
  return Array.from({ length: RUNS }, (_, i) => {
    const wait = (["event", "task", "timer"] as const)[i % 3] as Workload.Wait
    const second = i >= RUNS / 2
    const hang = second && wait !== "timer" && hung < HUNG
    if (hang) hung += 1
    return { id: `w${i}-${randomUUID().slice(0, 8)}`, wait, until: now + (second ? secondTimers : 1), hang }
  })
}

const serveArgs = (store: string) => [
  "--store",
  store,
  "--runs",
  "test/runtime-process/Workload.ts",
  "--sweep-every",
  "1",
  "--lease-ttl",
  LEASE_TTL,
]

const envOf = (t: Serving.Tenancy, acts: string, hang: boolean) => ({
  AGENTPLANE_TOKENS_JSON: t.tokensJson,
  AGENTPLANE_POLICY: t.policy,
  WORKLOAD_ACTS: acts,
  WORKLOAD_HANG: hang ? "1" : "0",
})

/** Runs `f` over `items`, `concurrency` at a time. */
const pool = async <A>(items: ReadonlyArray<A>, concurrency: number, f: (a: A, i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++
        await f(items[i] as A, i)
      }
    }),
  )
}

type Suspension = { readonly correlation?: ReadonlyArray<{ readonly value: string }> } | null

const startRun = async (base: string, t: Serving.Tenancy, input: Workload.Input): Promise<Started> => {
  const body = await Serving.expectCall(201, base, "POST", "/runs", t.reviewer, {
    capability: Workload.CAPABILITY,
    input,
    case: { kind: Workload.CASE_KIND, correlation: [Workload.keyOf(input.id)] },
    admissionKey: input.id,
  })
  const run = body.run as RunId
  let view = body
  // Normally the start answers the suspended run; on a loaded box its lease can lapse mid-start,
  // a sweep then finishes the stretch to the wait, and the answer shows the run in between. The
  // sweep's recovery pass may be behind other runs, so the wait lasts while this run's journal
  // or any other start moves.
  await Serving.whileProgressing(
    `run ${input.id} to suspend`,
    STALL_MS,
    async () => {
      if (view.suspended === null) view = await Serving.expectCall(200, base, "GET", `/runs/${run}`, t.reviewer)
      return view.suspended !== null
    },
    async () => [(view.head as { readonly seq?: number } | undefined)?.seq, suspendedStarts],
  )
  suspendedStarts += 1
  const suspended = view.suspended as Suspension
  return {
    input,
    run,
    task: input.wait === "task" ? Option.fromNullable(suspended?.correlation?.[0]?.value) : Option.none(),
  }
}

/** Answers the run's wait through `base`: its event, or the reviewer's approval; a timer needs nothing. */
const wake = async (base: string, t: Serving.Tenancy, s: Started): Promise<void> => {
  if (s.input.wait === "event") {
    const answer = await Serving.expectCall(202, base, "POST", "/events", t.agent, {
      id: `go-${s.input.id}`,
      kind: Workload.EVENT_KIND,
      correlation: [Workload.keyOf(s.input.id)],
      payload: { go: true },
    })
    expect(["resumed", "buffered", "duplicate"]).toContain(answer.result)
  } else if (s.input.wait === "task") {
    const task = Option.getOrThrow(s.task)
    await Serving.expectCall(200, base, "POST", `/tasks/${task}/decide`, t.reviewer, {
      approved: true,
      reason: "fine",
    })
  }
}

const succeeded = async (base: string, t: Serving.Tenancy): Promise<number> => {
  const answer = await Serving.expectCall(200, base, "GET", "/runs?outcome=succeeded&limit=500", t.reviewer)
  // The list is a page, `{items, truncated}`; 500 holds the whole workload.
  const items = answer.items
  if (!Array.isArray(items) || answer.truncated !== false)
    throw new Error(`not a whole page: ${JSON.stringify(answer)}`)
  return items.length
}

const actsOf = (file: string): ReadonlyArray<Workload.ActLine> =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Workload.ActLine)
    : []

/** How many runs have an act hanging (or hung) in a `WORKLOAD_HANG` process. */
const hangingRuns = (file: string): number => new Set(actsOf(file).flatMap((l) => (l.hung ? [l.run] : []))).size

/**
 * What the stores and the provider say once every run has ended: each run sealed `succeeded`
 * with an intact chain and exactly one answer to its one wait; per run and act one idempotency
 * key, reached twice for the hung runs' settle and once otherwise; and each hung run recovered
 * by a sweep (a `run_recovered` note, written before the resume that bumped its epoch).
 */
const audit = <E>(
  stores: Layer.Layer<Stores.Stores, E>,
  t: Serving.Tenancy,
  started: ReadonlyArray<Started>,
  acts: string,
) =>
  Effect.gen(function* () {
    const journal = yield* JournalStore
    for (const s of started) {
      const records = yield* journal.read(s.run, 1)
      expect((yield* journal.verify(s.run)).seq).toBe(records.length)
      expect(records.at(-1)?.kind).toMatchObject({ kind: "RunSealed", outcome: "succeeded" })
      const waits = records.flatMap((r) =>
        r.kind.kind === "EffectStarted" &&
        WAIT_KINDS.has(String((r.kind.descriptor as { readonly kind?: unknown }).kind)) &&
        Option.isSome(r.effectKey)
          ? [r.effectKey.value]
          : [],
      )
      expect(waits, `run ${s.input.id} waits once`).toHaveLength(1)
      const answers = records.filter(
        (r) => r.kind.kind === "EffectDone" && Option.isSome(r.effectKey) && r.effectKey.value === waits[0],
      )
      expect(answers, `run ${s.input.id}'s wait is answered once`).toHaveLength(1)
    }

    // Applied once: every call of an act carries the key of its first attempt. A call may be
    // repeated with that key (the hung runs' settle always is; on a loaded box a lease can lapse
    // under a live owner, whose act a sweep then sends again), never made with a second key.
    const lines = actsOf(acts)
    const hungRuns = new Set(started.filter((s) => s.input.hang).map((s) => s.run as string))
    for (const s of started) {
      for (const act of ["charge", "settle"] as const) {
        const calls = lines.filter((l) => l.run === s.run && l.act === act)
        expect(new Set(calls.map((l) => l.key)).size, `${act} of ${s.input.id} is applied once`).toBe(1)
        if (act === "settle" && hungRuns.has(s.run)) {
          // Died inside the act in the doomed process, then sent again by the survivor.
          expect(calls[0]?.hung, `${s.input.id} hung first`).toBe(true)
          expect(
            calls.slice(1).some((l) => !l.hung),
            `${s.input.id} was settled after the kill`,
          ).toBe(true)
        }
      }
    }

    // The sweep's evidence runs are found among all the tenant's runs, walked by recency: a
    // scan that assumes no index, whatever `runsByOutcome("swept")` lists.
    const recovered = new Set<string>()
    const seen = new Set(started.map((s) => s.run as string))
    let after = Option.none<Journal.Cursor>()
    for (;;) {
      const page = yield* journal.recentRuns(after, 500)
      const fresh = page.filter(({ run }) => !seen.has(run))
      for (const { run } of fresh) {
        seen.add(run)
        for (const r of yield* journal.read(run, 1)) {
          if (r.kind.kind === "Swept" && r.kind.action === "run_recovered") recovered.add(r.kind.subject)
        }
      }
      const last = page.at(-1)
      if (last === undefined) break
      after = Option.some({ updatedAt: last.updatedAt, run: last.run })
    }
    for (const run of hungRuns) expect(recovered.has(run), `hung run ${run} was recovered by a sweep`).toBe(true)
  }).pipe(Effect.provideService(Tenant, TenantId.make(t.tenant)), Effect.provide(stores))

/** Stops the servers whatever happened; a failure carries the tail of their logs, which say why. */
const withLogs =
  (servers: ReadonlyArray<Serving.Server>) =>
  <A>(effect: Effect.Effect<A>): Effect.Effect<A> =>
    effect.pipe(
      Effect.catchAllDefect((defect) =>
        Effect.die(
          new Error(
            `${defect instanceof Error ? defect.message : String(defect)}\n${servers
              .map((server, i) => `--- server ${i} ---\n${server.stderr().slice(-4000)}`)
              .join("\n")}`,
          ),
        ),
      ),
      Effect.ensuring(Effect.promise(() => Promise.all(servers.map(Serving.stop)))),
    )

/** Starts every run through `servers` in turn; all suspend at their wait. */
const startAll = async (
  servers: ReadonlyArray<Serving.Server>,
  t: Serving.Tenancy,
  all: ReadonlyArray<Workload.Input>,
) => {
  const started: Array<Started> = []
  await pool(all, 4, async (input, i) => {
    started[i] = await startRun((servers[i % servers.length] as Serving.Server).base, t, input)
  })
  return started
}

/**
 * The shared middle of both variants: wake the first half through `live` (and let its timers
 * fire), then the hung runs through `doomed`, and kill it once all six hang inside their act.
 */
const firstHalfThenKill = async (
  live: ReadonlyArray<Serving.Server>,
  doomed: Serving.Server,
  t: Serving.Tenancy,
  started: ReadonlyArray<Started>,
  acts: string,
) => {
  const first = started.slice(0, RUNS / 2)
  await pool(first, 4, (s, i) => wake((live[i % live.length] as Serving.Server).base, t, s))
  let done = 0
  await Serving.whileProgressing(
    () => `the first half to succeed (${done} of ${RUNS / 2} did)`,
    STALL_MS,
    async () => {
      done = await succeeded(doomed.base, t)
      return done >= RUNS / 2
    },
    async () => done,
  )

  await pool(
    started.filter((s) => s.input.hang),
    HUNG,
    (s) => wake(doomed.base, t, s),
  )
  // Bounded by progress, not by a fixed time: under load the doomed process starts its acts slowly.
  await Serving.whileProgressing(
    () => `six acts to hang (${hangingRuns(acts)} did)`,
    STALL_MS,
    async () => hangingRuns(acts) >= HUNG,
    async () => hangingRuns(acts),
  )
  doomed.child.kill("SIGKILL")
  expect(await doomed.ended).toBe("SIGKILL")
  expect(hangingRuns(acts)).toBe(HUNG)
}

/** Wakes the rest through `survivor` and waits for all 200 to succeed. */
const rest = async (survivor: Serving.Server, t: Serving.Tenancy, started: ReadonlyArray<Started>) => {
  await pool(
    started.slice(RUNS / 2).filter((s) => !s.input.hang),
    4,
    (s) => wake(survivor.base, t, s),
  )
  let done = 0
  await Serving.whileProgressing(
    () => `every run to succeed (${done} of ${RUNS} did)`,
    STALL_MS,
    async () => {
      done = await succeeded(survivor.base, t)
      return done === RUNS
    },
    async () => done,
  )
}

describe("two serve processes on one PostgreSQL, one killed", () => {
  it.live(
    "200 runs waiting on events, tasks and timers all end sealed; none loses its wake-up or applies an act twice",
    () =>
      Effect.gen(function* () {
        const t = Serving.tenancy(Workload.EXCLUDED)
        const acts = join(inject("scratchDir"), `two-acts-${randomUUID()}.jsonl`)
        const url = inject("pgUrl")
        const servers: Array<Serving.Server> = []
        const started = yield* Effect.promise(async () => {
          const doomed = await Serving.start(serveArgs(url), envOf(t, acts, true))
          servers.push(doomed)
          const survivor = await Serving.start(serveArgs(url), envOf(t, acts, false))
          servers.push(survivor)
          const all = inputs(Math.floor(Date.now() / 1000), 40)
          const started = await startAll([doomed, survivor], t, all)
          await firstHalfThenKill([doomed, survivor], doomed, t, started, acts)
          await rest(survivor, t, started)
          return started
        }).pipe(withLogs(servers))
        yield* audit(PgBackend.layer({ url, maxConnections: 2 }), t, started, acts)
      }),
    420_000,
  )
})

describe("one serve process on a SQLite file, killed and restarted", () => {
  it.live(
    "the same workload loses nothing: every run ends sealed, no wake-up lost, no act applied twice",
    () =>
      Effect.gen(function* () {
        const t = Serving.tenancy(Workload.EXCLUDED)
        const acts = join(inject("scratchDir"), `restart-acts-${randomUUID()}.jsonl`)
        const file = join(inject("scratchDir"), `restart-${randomUUID()}.db`)
        const servers: Array<Serving.Server> = []
        const started = yield* Effect.promise(async () => {
          const doomed = await Serving.start(serveArgs(file), envOf(t, acts, true))
          servers.push(doomed)
          const all = inputs(Math.floor(Date.now() / 1000), 40)
          const started = await startAll([doomed], t, all)
          await firstHalfThenKill([doomed], doomed, t, started, acts)
          const restarted = await Serving.start(serveArgs(file), envOf(t, acts, false))
          servers.push(restarted)
          await rest(restarted, t, started)
          return started
        }).pipe(withLogs(servers))
        // Opened as the server opened it: sealed under the KEK file `serve` wrote beside the fresh
        // file, so the effects' descriptors read in clear.
        const stores = SqliteBackend.layerConfig.pipe(
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["AGENTPLANE_STORE", file]])))),
        )
        yield* audit(stores, t, started, acts)
      }),
    420_000,
  )
})
