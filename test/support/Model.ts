/**
 * Model-based testing: random operation sequences run against a reference model (the memory
 * layers) and a system under test (a SQL backend), every answer compared. A command runs one store
 * method on both sides, in the same tenant, and fails the run on the first answer that differs;
 * fast-check then shrinks the sequence and prints it (the `Counterexample`), with seed and path.
 *
 * Ids a store generates itself (a case opened by `correlateOrOpen`) differ between the sides, so a
 * ledger carries the bijection: system answers are rewritten into the model's ids before comparing.
 */
import { inspect } from "node:util"
import { Cause, type Context, Effect, Exit, FastCheck as fc, Option } from "effect"
import { Tenant, type TenantId } from "../../src/domain/Tenant.js"
import type * as StoreTags from "../../src/services/Stores.js"
import { assert } from "./Assert.js"
import { freshTenant } from "./Backend.js"

export type Stores = StoreTags.Stores

/** `AGENTPLANE_MODEL_RUNS` sequences per store and backend; the default keeps the suite within ~30 s. */
export const numRuns = Number(process.env.AGENTPLANE_MODEL_RUNS ?? 15)

/** Up to this many commands per sequence: long enough for collisions, short enough to read once shrunk. */
export const maxCommands = 40

/** The vitest timeout of one property: a minute per 15 runs, so a 10x run is not cut off. */
export const timeout = 60_000 * Math.max(1, Math.ceil(numRuns / 15))

/** Which side a command is running on; refs in the ledger resolve per side. */
export type SideName = "model" | "system"

/** Where the stores of one side come from; called once per sequence, so each sequence starts empty. */
export interface Side {
  readonly name: string
  readonly fresh: () => Promise<Context.Context<Stores>>
}

/** What every ledger carries: system id → model id, for the ids the stores mint. */
export interface Ledger {
  readonly toModel: Map<string, string>
}

export const ledger = (): Ledger => ({ toModel: new Map() })

interface Real {
  readonly model: Context.Context<Stores>
  readonly system: Context.Context<Stores>
  /** The sides' names, for the report. */
  readonly names: { readonly model: string; readonly system: string }
  /** Two tenants per sequence, fresh, so nothing needs cleaning and G1 is exercised. */
  readonly tenants: readonly [TenantId, TenantId]
}

/** One store method with its arguments, as a command can run it on either side. */
export interface Op<L extends Ledger> {
  /** The method and its arguments as the shrunk sequence prints them. */
  readonly show: string
  /** 0 or 1: which of the sequence's tenants the call runs as. */
  readonly tenant: number
  /** The call on one side, its answer already projected to what the contract fixes. */
  readonly run: (ledger: L, side: SideName) => Effect.Effect<unknown, unknown, Stores | Tenant>
  /** Records ids minted by this call (both answers are in), before they are compared. */
  readonly learn?: (ledger: L, model: Exit.Exit<unknown, unknown>, system: Exit.Exit<unknown, unknown>) => void
}

class Step<L extends Ledger> implements fc.AsyncCommand<L, Real> {
  constructor(readonly op: Op<L>) {}
  check(): boolean {
    return true
  }
  async run(ledger: L, real: Real): Promise<void> {
    const tenant = real.tenants[this.op.tenant] ?? real.tenants[0]
    const on = (side: SideName) =>
      Effect.runPromiseExit(
        this.op
          .run(ledger, side)
          .pipe(Effect.provideService(Tenant, tenant), Effect.provide(side === "model" ? real.model : real.system)),
      )
    const model = await on("model")
    const system = await on("system")
    for (const [name, exit] of [
      [real.names.model, model],
      [real.names.system, system],
    ] as const) {
      // A defect is never an answer: it fails the run whatever the other side did.
      if (Exit.isFailure(exit) && Option.isNone(Cause.failureOption(exit.cause)))
        assert.fail(`${name} died in ${this.op.show}:\n${Cause.pretty(exit.cause)}`)
    }
    this.op.learn?.(ledger, model, system)
    assert.deepStrictEqual(
      render(system, ledger.toModel),
      render(model, ledger.toModel),
      `${this.op.show}: ${real.names.system} (actual) disagrees with the model, ${real.names.model} (expected)`,
    )
  }
  toString(): string {
    return `${this.op.show}${this.op.tenant === 0 ? "" : "@t1"}`
  }
}

/** A command arbitrary over a store's ledger: what `StoreModel.commands` holds. */
export type Command<L extends Ledger> = fc.Arbitrary<fc.AsyncCommand<L, Real>>

/** One store's commands and the ledger each sequence starts from. */
export interface StoreModel<L extends Ledger> {
  readonly name: string
  readonly ledger: () => L
  readonly commands: ReadonlyArray<Command<L>>
}

/**
 * The command builder for ledger `L`: arguments drawn from `args`, turned into an op, run as a
 * tenant drawn from the sequence's two.
 */
export const commandFor =
  <L extends Ledger>() =>
  <A>(args: fc.Arbitrary<A>, op: (args: A) => Omit<Op<L>, "tenant">): Command<L> =>
    fc
      .tuple(fc.integer({ min: 0, max: 9 }), args)
      // Nine calls in ten on the first tenant: collisions need density, isolation needs only a few.
      .map(([t, a]) => new Step<L>({ ...op(a), tenant: t === 9 ? 1 : 0 }))

/** `cmd` listed `n` times: a command set is drawn from uniformly, so this is how a writer gets drawn more often. */
export const times = <L extends Ledger>(n: number, cmd: Command<L>): ReadonlyArray<Command<L>> =>
  Array.from({ length: n }, () => cmd)

/** A method call as printed: `name(arg, …)` with each argument inspected on one line. */
export const show = (name: string, ...args: ReadonlyArray<unknown>): string =>
  `${name}(${args.map((a) => (typeof a === "string" ? a : inspect(a, { breakLength: Number.POSITIVE_INFINITY, depth: 6 }))).join(", ")})`

/**
 * Runs `numRuns` random sequences of `commands` against a fresh model and the system. Fails with
 * fast-check's report: the shrunk sequence, seed and path, then the first disagreement. A failure
 * replays with `AGENTPLANE_MODEL_SEED`, `AGENTPLANE_MODEL_PATH` and `AGENTPLANE_MODEL_REPLAY` set to
 * the reported seed, path and `replayPath` (and `-t` naming the one test).
 */
export const check = <L extends Ledger>(store: StoreModel<L>, model: Side, system: Side) =>
  Effect.tryPromise({
    try: () =>
      fc.assert(
        fc.asyncProperty(
          fc.commands([...store.commands], { maxCommands, size: "max", ...replayCommands }),
          async (cmds) => {
            const real: Real = {
              model: await model.fresh(),
              system: await system.fresh(),
              names: { model: model.name, system: system.name },
              tenants: [freshTenant(), freshTenant()],
            }
            await fc.asyncModelRun(() => ({ model: store.ledger(), real }), cmds)
          },
        ),
        { numRuns, ...replay },
      ),
    catch: (e) => e,
  })

// internal

const replay = {
  ...(process.env.AGENTPLANE_MODEL_SEED === undefined ? {} : { seed: Number(process.env.AGENTPLANE_MODEL_SEED) }),
  ...(process.env.AGENTPLANE_MODEL_PATH === undefined ? {} : { path: process.env.AGENTPLANE_MODEL_PATH }),
}
const replayCommands =
  process.env.AGENTPLANE_MODEL_REPLAY === undefined ? {} : { replayPath: process.env.AGENTPLANE_MODEL_REPLAY }

/** An answer as plain data in the model's ids: `{ok}` or `{error}` (tag and fields). */
const render = (exit: Exit.Exit<unknown, unknown>, toModel: ReadonlyMap<string, string>): unknown =>
  Exit.match(exit, {
    onSuccess: (value) => ({ ok: plain(value, toModel) }),
    onFailure: (cause) => ({
      error: Option.match(Cause.failureOption(cause), {
        onNone: () => Cause.pretty(cause),
        onSome: (e) => plain(errorFields(e), toModel),
      }),
    }),
  })

// Free-text details are the implementation's wording; the tag and the other fields are the contract.
const WORDING = new Set(["Backend", "Corrupt", "ImportRefused"])

const errorFields = (error: unknown): unknown => {
  if (typeof error !== "object" || error === null) return error
  const tag = (error as { _tag?: unknown })._tag
  const fields: Record<string, unknown> = { _tag: tag, ...Object.fromEntries(Object.entries(error)) }
  if (typeof tag === "string" && WORDING.has(tag)) delete fields.detail
  return fields
}

const MINTED = /\b(?:case|run|batch)_[0-9A-HJKMNP-TV-Z]{26}\b/g

/** Options, classes, tagged unions and bytes as plain objects; strings mapped into model ids. */
const plain = (value: unknown, toModel: ReadonlyMap<string, string>): unknown => {
  // Ids also appear inside text (`NotFound` names `<case>/<name>`).
  if (typeof value === "string") return value.replace(MINTED, (id) => toModel.get(id) ?? id)
  if (typeof value !== "object" || value === null) return value
  if (Option.isOption(value))
    return Option.match(value, { onNone: () => ({ none: true }), onSome: (v) => ({ some: plain(v, toModel) }) })
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString("hex")}`
  if (Array.isArray(value)) return value.map((v) => plain(v, toModel))
  const out: Record<string, unknown> = {}
  const tag = (value as { _tag?: unknown })._tag
  if (tag !== undefined) out._tag = tag
  for (const [k, v] of Object.entries(value)) out[k] = plain(v, toModel)
  return out
}
