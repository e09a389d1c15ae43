/**
 * The staleness check for the raw mirrors: runs each operation twice through the store, with its
 * statements captured on the SqlClient's own path (`Capture`), and twice through its raw mirror
 * with the driver's statements recorded, and compares the two scripts statement for statement,
 * transaction boundaries included. A store whose SQL changes fails this check, naming the first
 * statement that differs, before anything is timed.
 */
import { Effect } from "effect"
import { Tenant, TenantId } from "../src/domain/Tenant.js"
import { capture, normalize, script } from "./Capture.js"
import type { Runtime } from "./Databases.js"
import type { Op } from "./Op.js"
import type { Raw } from "./Raw.js"

export interface Stale {
  readonly op: string
  readonly dialect: string
  readonly store: ReadonlyArray<string>
  readonly raw: ReadonlyArray<string>
  /** Index of the first differing line. */
  readonly at: number
}

/** The two scripts of `op` on this backend; `tenantPrefix` keeps repeated checks apart. */
export const scripts = async (op: Op, runtime: Runtime, raw: Raw, tenantPrefix: string) => {
  const viaStore = op.make({ tenant: `${tenantPrefix}-store`, count: 2, workers: 1 })
  await viaStore.seed(raw)
  // Two calls each: a store that remembers something from its first call (pg's journal head)
  // sends its second differently, and the mirror must follow both.
  const captured = await runtime.runPromise(
    capture(Effect.zipRight(viaStore.store(0, 0), viaStore.store(1, 0))).pipe(
      Effect.provideService(Tenant, TenantId.make(`${tenantPrefix}-store`)),
    ),
  )
  const viaRaw = op.make({ tenant: `${tenantPrefix}-raw`, count: 2, workers: 1 })
  await viaRaw.seed(raw)
  raw.record = []
  let sent: ReadonlyArray<string> = []
  try {
    await viaRaw.raw(raw, 0, 0)
    await viaRaw.raw(raw, 1, 0)
  } finally {
    sent = raw.record ?? []
    raw.record = undefined
  }
  return { store: script(captured.statements), raw: sent.map(rawLine) }
}

/** `undefined` when the mirror sends what the store sends, else where they part. */
export const check = async (op: Op, runtime: Runtime, raw: Raw, tenantPrefix: string): Promise<Stale | undefined> => {
  const both = await scripts(op, runtime, raw, tenantPrefix)
  const length = Math.max(both.store.length, both.raw.length)
  for (let at = 0; at < length; at++) {
    if (both.store[at] !== both.raw[at]) return { op: op.name, dialect: raw.dialect, ...both, at }
  }
  return undefined
}

export const describe = (stale: Stale): string =>
  [
    `raw mirror of "${stale.op}" on ${stale.dialect} is stale at statement ${stale.at + 1}:`,
    `  store: ${stale.store[stale.at] ?? "(nothing)"}`,
    `  raw:   ${stale.raw[stale.at] ?? "(nothing)"}`,
  ].join("\n")

// internal

/**
 * The store's transactions are written `BEGIN` in its script: which kind sqlite's `Dialect.write`
 * opens cannot be seen from a statement, and its code says IMMEDIATE, which the raw side sends.
 */
const rawLine = (text: string): string => (text === "BEGIN IMMEDIATE" ? "BEGIN" : normalize(text))
