/**
 * One measured operation: how its fixtures are seeded, the store call, and its raw mirror (the
 * identical statements through the bare driver). Inputs are built in `make`, before any timing,
 * so neither side pays for constructing domain values inside the measured loop.
 */
import { createHash } from "node:crypto"
import type { Effect } from "effect"
import { EffectKey } from "../src/domain/EffectKey.js"
import { CaseId, RunId } from "../src/domain/Ids.js"
import type { Tenant } from "../src/domain/Tenant.js"
import * as Time from "../src/domain/Time.js"
import type { Services } from "./Databases.js"
import type { Raw } from "./Raw.js"

export interface Cell {
  readonly tenant: string
  /** Operations this cell will run (warm-up included); fixtures are seeded for all of them. */
  readonly count: number
  /** Concurrent workers; worker `w` is 0 … workers − 1. */
  readonly workers: number
}

export interface Instance {
  /** Writes the fixtures the cell's operations consume, through the raw client (never timed). */
  readonly seed: (raw: Raw) => Promise<void>
  /** Operation `i` through the store, run by worker `w`; fails when the store did not do the work. */
  readonly store: (i: number, w: number) => Effect.Effect<void, unknown, Services | Tenant>
  /** Operation `i` as the same statements through the driver alone. */
  readonly raw: (raw: Raw, i: number, w: number) => Promise<void>
  /** pg only: candidate rewrites of the store path (a writable CTE …), timed beside the mirror. */
  readonly prototypes?: ReadonlyArray<Prototype>
}

export interface Prototype {
  readonly name: string
  /** Run on the prepared-statement client rather than the plain one. */
  readonly prepared?: boolean
  readonly run: (raw: Raw, i: number, w: number) => Promise<void>
  /** The same rewrite through the store's own `SqlClient`, showing the ratio the rewritten path would reach. */
  readonly store?: (i: number, w: number) => Effect.Effect<void, unknown, Services | Tenant>
}

export interface Op {
  readonly name: string
  /** Full-run operations per cell; heavy operations run fewer so every cell takes about as long. */
  readonly ops: number
  readonly make: (cell: Cell) => Instance
}

/** The instant every operation passes as `now`/`at`: time is a parameter, never the clock. */
export const NOW = Time.Timestamp.make(1_700_000_000)

/** A run id that is a valid `run_<ULID>` (digits only, so `0…` leads): deterministic per number. */
export const runId = (n: number): RunId => RunId.make(`run_${String(n).padStart(26, "0")}`)
export const caseId = (n: number): CaseId => CaseId.make(`case_${String(n).padStart(26, "0")}`)
export const effectKey = (n: number): EffectKey => EffectKey.make(hex64(`effect-${n}`))
export const hex64 = (seed: string): string => createHash("sha256").update(seed).digest("hex")

/** Fails the operation when a result says the work was not done: a bench that measures no-ops lies. */
export const expect = (ok: boolean, what: string): void => {
  if (!ok) throw new Error(`bench operation did not do its work: ${what}`)
}
