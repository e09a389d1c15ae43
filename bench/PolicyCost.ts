/**
 * `npm run bench -- --policy`: what deciding every effect with Cedar costs (issue 34's bench). The
 * bench's two-effect run (keyed, as in the peer cell) on PostgreSQL at concurrency 16, under
 * `PolicyEngine.allowAll` (no request is built) and under a Cedar bundle that permits everything
 * (each effect is decided: the request built and, unless the engine remembers the decision, handed
 * to cedar-wasm and evaluated), the two interleaved round by round in one process so the machine's
 * drift falls on both alike. Reported: client CPU per run on each side and the median of the
 * per-round ratios.
 *
 * Which side goes first alternates by round (an even number of rounds): the first pass of a round
 * measured 15–20% more than the second whichever side it was (allowAll first: Cedar/allowAll 0.84;
 * Cedar first: 1.20; same code, same hour, load ~4 on 2 cores), so a fixed order biased the ratio
 * by about as much as the bar allows. A pause before each timed pass did not remove the bias.
 */
import { Effect, Either, Layer } from "effect"
import * as Run from "../src/domain/Run.js"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import * as PolicyEngineCedar from "../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../src/policy/Bundle.js"
import * as Runtime from "../src/runtime/Runtime.js"
import * as PolicyEngine from "../src/services/PolicyEngine.js"
import type * as Databases from "./Databases.js"
import { median } from "./Harness.js"
import * as RuntimeBench from "./Runtime.js"

/** The bench's two effect kinds, declared so the bundle validates, and one policy permitting every action. */
const SCHEMA = `action "bench.first", "bench.second" in [Agentplane::Action::"effect"] appliesTo {
  principal: Agentplane::Agent,
  resource: [Agentplane::Case, Agentplane::Run],
  context: Agentplane::EffectContext,
};`
const PERMIT_ALL = `@id("all") permit (principal, action, resource);`

export interface Round {
  readonly allowAllUs: number
  readonly cedarUs: number
  readonly ratio: number
  /** Whether Cedar's pass came first in the round. */
  readonly cedarFirst: boolean
}

export interface Result {
  readonly concurrency: number
  readonly runs: number
  readonly rounds: ReadonlyArray<Round>
  readonly ratio: number
}

export const cedarAllowAll = (): Layer.Layer<PolicyEngine.PolicyEngine> => {
  const loaded = PolicyEngineCedar.load(Bundle.make("bench", [{ name: "all.cedar", text: PERMIT_ALL }], [SCHEMA]))
  if (Either.isLeft(loaded)) throw new Error(loaded.left.message)
  return Layer.succeed(PolicyEngine.PolicyEngine, PolicyEngineCedar.engine(loaded.right))
}

export const run = async (
  db: Databases.Throwaway,
  options: { readonly quick: boolean; readonly log: (line: string) => void },
): Promise<Result> => {
  const concurrency = 16
  const runs = options.quick ? 200 : 1500
  // Even, so each side goes first as often as the other.
  const roundCount = options.quick ? 4 : 6
  const sides = {
    allowAll: RuntimeBench.runtimeOn(db, "pg", concurrency),
    cedar: RuntimeBench.runtimeOn(db, "pg", concurrency, cedarAllowAll()),
  }
  const tenant = TenantId.make("bench-policy")
  let next = 0
  const pass = async (rt: (typeof sides)["cedar"], total: number) => {
    let started = 0
    const worker = async () => {
      while (started < total) {
        started++
        const n = next++
        const result = await rt.runPromise(
          Effect.flatMap(Runtime.Runtime, (x) =>
            x.run(RuntimeBench.TwoEffects, Run.labeled({ n }, "operator"), { admissionKey: `policy-${n}` }),
          ).pipe(Effect.provideService(Tenant, tenant)) as Effect.Effect<Runtime.RunResult<number>, unknown, never>,
        )
        if (result.status._tag !== "Succeeded") throw new Error(`bench run ended ${result.status._tag}`)
      }
    }
    await Promise.all(Array.from({ length: concurrency }, worker))
  }
  const cpuPerRun = async (rt: (typeof sides)["cedar"]) => {
    const before = process.cpuUsage()
    await pass(rt, runs)
    const used = process.cpuUsage(before)
    return (used.user + used.system) / runs
  }
  try {
    for (const rt of [sides.allowAll, sides.cedar]) {
      await rt.runtime()
      await pass(rt, Math.min(runs, 300))
    }
    const rounds: Array<Round> = []
    for (let i = 0; i < roundCount; i++) {
      const cedarFirst = i % 2 === 1
      const first = await cpuPerRun(cedarFirst ? sides.cedar : sides.allowAll)
      const second = await cpuPerRun(cedarFirst ? sides.allowAll : sides.cedar)
      const [allowAllUs, cedarUs] = cedarFirst ? [second, first] : [first, second]
      rounds.push({ allowAllUs, cedarUs, ratio: cedarUs / allowAllUs, cedarFirst })
      options.log(
        `policy round ${i + 1} (${cedarFirst ? "Cedar" : "allowAll"} first): allowAll ${allowAllUs.toFixed(0)} µs, Cedar allow-all ${cedarUs.toFixed(0)} µs per run (×${(cedarUs / allowAllUs).toFixed(2)})`,
      )
    }
    return { concurrency, runs, rounds, ratio: median(rounds.map((r) => r.ratio)) }
  } finally {
    await Promise.all([sides.allowAll.dispose(), sides.cedar.dispose()])
  }
}
