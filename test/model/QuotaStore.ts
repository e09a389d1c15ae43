/**
 * QuotaStore commands (§5.6): three runs reserving slots under limits 0–3 or none, the halt set
 * and lifted, spend accrued over two periods up to the saturation point.
 */
import { Effect, FastCheck as fc, Option } from "effect"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import * as Model from "../support/Model.js"
import { spend } from "./BatchStore.js"
import * as Domain from "./Domain.js"

export interface QuotaLedger extends Model.Ledger {
  readonly pools: Domain.Pools
}

const ledger = (): QuotaLedger => ({ ...Model.ledger(), pools: Domain.pools() })

const period = fc.constantFrom("2026-01", "2026-02")

const command = Model.commandFor<QuotaLedger>()
const store = QuotaStore

const commands = [
  command(
    fc.tuple(Domain.ref(3), fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }), Domain.at),
    ([run, limit, at]) => ({
      show: Model.show("reserve", `run#${run}`, limit ?? "none", at),
      run: (l) =>
        Effect.flatMap(store, (s) => s.reserve(Domain.pick(l.pools.runs, run), Option.fromNullable(limit), at)),
    }),
  ),
  command(Domain.ref(3), (run) => ({
    show: Model.show("release", `run#${run}`),
    run: (l) => Effect.flatMap(store, (s) => s.release(Domain.pick(l.pools.runs, run))),
  })),
  command(fc.option(fc.constantFrom("incident", "audit"), { nil: undefined }), (reason) => ({
    show: Model.show("setHalt", reason ?? "none"),
    run: () => Effect.flatMap(store, (s) => s.setHalt(Option.fromNullable(reason))),
  })),
  command(fc.constant(null), () => ({
    show: Model.show("halted"),
    run: () => Effect.flatMap(store, (s) => s.halted()),
  })),
  command(fc.tuple(period, spend), ([p, sp]) => ({
    show: Model.show("accrue", p, sp),
    run: () => Effect.flatMap(store, (s) => s.accrue(p, sp)),
  })),
  command(period, (p) => ({
    show: Model.show("spent", p),
    run: () => Effect.flatMap(store, (s) => s.spent(p)),
  })),
  command(fc.constant(null), () => ({
    show: Model.show("running"),
    run: () => Effect.flatMap(store, (s) => s.running()),
  })),
]

export const model: Model.StoreModel<QuotaLedger> = { name: "QuotaStore", ledger, commands }
