/**
 * CaseStore in memory (§5.1), written from the contract as plain maps: the reference model the
 * SQL layers are compared against, and a store for users' own tests. Each verb runs its whole
 * read-check-write in one synchronous step (see `perTenant`), so the races G5 settles in the
 * database cannot arise: there is nothing to interleave with.
 */
import { Effect, Either, Layer, Option } from "effect"
import { Case, CaseCensus, type CaseStatus, Correlation } from "../../domain/Case.js"
import * as CorrelationKey from "../../domain/CorrelationKey.js"
import { Deadline, isOutstanding } from "../../domain/Deadline.js"
import type { Digest } from "../../domain/Digest.js"
import { type CaseId, CaseVersion, generateCaseId, type RunId } from "../../domain/Ids.js"
import * as Time from "../../domain/Time.js"
import { CaseConflict, ImportRefused, NotFound, ObligationsOutstanding } from "../../errors/StoreError.js"
import { CaseStore } from "../../services/CaseStore.js"
import { clampLimit, compareNumber, compareText, fromJsonText, jsonText, perTenant } from "./internal/Memory.js"

/** A fresh, empty CaseStore each time the layer is built. */
export const make: Effect.Effect<typeof CaseStore.Service> = Effect.sync(() => {
  const atomically = perTenant(() => new Map<CaseId, Row>())

  /** The open case holding the first of `keys` (in the given order) that any open case holds. */
  const holder = (cases: Map<CaseId, Row>, keys: ReadonlyArray<CorrelationKey.CorrelationKey>) => {
    for (const key of keys) {
      for (const row of cases.values()) {
        if (row.keys.some((k) => k.open && CorrelationKey.equals(k.key, key))) return Option.some(row.id)
      }
    }
    return Option.none<CaseId>()
  }

  const close = (cases: Map<CaseId, Row>, kase: CaseId) => {
    const row = cases.get(kase)
    if (row === undefined) return Effect.fail(new NotFound({ what: kase }))
    const outstanding = [...row.deadlines.values()].filter((d) => isOutstanding(d.state)).length
    if (outstanding > 0) return Effect.fail(new ObligationsOutstanding({ case: kase, outstanding }))
    row.status = "closed"
    // Released keys let the next message with such a key open a fresh matter.
    for (const k of row.keys) k.open = false
    return Effect.void
  }

  const allDeadlines = (cases: Map<CaseId, Row>) => [...cases.values()].flatMap((row) => [...row.deadlines.values()])

  return CaseStore.of({
    correlate: (keys) => atomically((cases) => Effect.succeed(holder(cases, keys))),

    correlateOrOpen: (kind, offered, at) =>
      atomically((cases) => {
        const keys = CorrelationKey.dedupe(offered)
        const held = holder(cases, keys)
        if (Option.isSome(held)) return Effect.succeed(Correlation.Attached({ case: held.value }))
        const id = generateCaseId()
        cases.set(id, {
          id,
          kind,
          status: "open",
          state: "null",
          version: 0,
          openedAt: at,
          keys: keys.map((key) => ({ key, open: true })),
          runs: [],
          blobs: new Map(),
          deadlines: new Map(),
        })
        return Effect.succeed(Correlation.Opened({ case: id }))
      }),

    case: (id) => atomically((cases) => Effect.succeed(Option.map(Option.fromNullable(cases.get(id)), toCase))),

    cases: (after, limit) =>
      atomically((cases) =>
        Effect.succeed(
          [...cases.values()]
            .filter((row) => Option.isNone(after) || compareText(row.id, after.value) > 0)
            .sort((a, b) => compareText(a.id, b.id))
            .slice(0, clampLimit(limit))
            .map(toCase),
        ),
      ),

    importCase: (kase, deadlines, blobs) =>
      atomically((cases) => {
        const refuse = (detail: string) => Effect.fail(new ImportRefused({ case: kase.id, detail }))
        const foreign = deadlines.find((d) => d.case !== kase.id)
        if (foreign !== undefined) return refuse(`deadline ${JSON.stringify(foreign.name)} belongs to ${foreign.case}`)
        if (new Set(deadlines.map((d) => d.name)).size !== deadlines.length) return refuse("two deadlines share a name")
        if (new Set(kase.runs).size !== kase.runs.length) return refuse("a run is listed twice")
        if (CorrelationKey.dedupe(kase.correlation).length !== kase.correlation.length) {
          return refuse("a correlation key is listed twice")
        }
        if (new Set(blobs).size !== blobs.length) return refuse("a blob digest is listed twice")
        // Refused, never merged: a restore rebuilds a case layer, it does not merge one.
        if (cases.has(kase.id)) return refuse("a case with this id already exists")
        const open = kase.status !== "closed"
        if (open) {
          const held = holder(cases, kase.correlation)
          if (Option.isSome(held)) return refuse(`an open key is held by open case ${held.value}`)
        }
        const state = jsonText(kase.state)
        if (Either.isLeft(state)) return Effect.dieMessage(`case state must be JSON: ${state.left}`)
        cases.set(kase.id, {
          id: kase.id,
          kind: kase.kind,
          status: kase.status,
          state: state.right,
          version: kase.version,
          openedAt: kase.openedAt,
          keys: kase.correlation.map((key) => ({ key, open })),
          runs: [...kase.runs],
          // The export carries digests, not link times; `openedAt + index` keeps their order.
          blobs: new Map(blobs.map((digest, i) => [digest, Time.Timestamp.make(kase.openedAt + i)])),
          deadlines: new Map(deadlines.map((d) => [d.name, copyDeadline(d)])),
        })
        return Effect.void
      }),

    attachRun: (kase, run) =>
      atomically((cases) => {
        const row = cases.get(kase)
        if (row === undefined) return Effect.fail(new NotFound({ what: kase }))
        // Positions are the array's order: a detached run leaves the others in theirs.
        if (!row.runs.includes(run)) row.runs.push(run)
        return Effect.void
      }),

    detachRun: (kase, run) =>
      atomically((cases) => {
        const row = cases.get(kase)
        const at = row?.runs.indexOf(run) ?? -1
        if (row === undefined || at < 0) return Effect.succeed(false)
        row.runs.splice(at, 1)
        return Effect.succeed(true)
      }),

    linkBlob: (kase, digest, at) =>
      atomically((cases) => {
        const row = cases.get(kase)
        if (row === undefined) return Effect.fail(new NotFound({ what: kase }))
        // Identical bytes are one artifact: the first link and its time stand.
        if (!row.blobs.has(digest)) row.blobs.set(digest, at)
        return Effect.void
      }),

    blobsOf: (kase) =>
      atomically((cases) =>
        Effect.succeed(
          [...(cases.get(kase)?.blobs.entries() ?? [])]
            .sort(([da, ta], [db, tb]) => compareNumber(ta, tb) || compareText(da, db))
            .map(([digest]) => digest),
        ),
      ),

    putState: (kase, expected, state) =>
      atomically((cases) => {
        const text = jsonText(state)
        if (Either.isLeft(text)) return Effect.dieMessage(`case state must be JSON: ${text.left}`)
        const row = cases.get(kase)
        if (row === undefined) return Effect.fail(new NotFound({ what: kase }))
        if (row.version !== expected) {
          return Effect.fail(new CaseConflict({ case: kase, expected, current: row.version }))
        }
        row.state = text.right
        row.version = expected + 1
        return Effect.succeed(CaseVersion.make(row.version))
      }),

    setStatus: (kase, status) =>
      atomically((cases) => {
        if (status === "closed") return close(cases, kase)
        const row = cases.get(kase)
        if (row === undefined) return Effect.fail(new NotFound({ what: kase }))
        // A plain write: no version bump, no transition check.
        row.status = status
        return Effect.void
      }),

    close: (kase) => atomically((cases) => close(cases, kase)),

    registerDeadline: (d) =>
      atomically((cases) => {
        const row = cases.get(d.case)
        if (row === undefined) return Effect.fail(new NotFound({ what: d.case }))
        // First registration stands: `resolvedAt` is fixed once and never recomputed.
        if (!row.deadlines.has(d.name)) row.deadlines.set(d.name, copyDeadline(d))
        return Effect.void
      }),

    deadlines: (kase) =>
      atomically((cases) =>
        Effect.succeed(
          [...(cases.get(kase)?.deadlines.values() ?? [])]
            .sort((a, b) => compareNumber(a.resolvedAt, b.resolvedAt) || compareText(a.name, b.name))
            .map(copyDeadline),
        ),
      ),

    setDeadlineState: (kase, name, state) =>
      atomically((cases) => {
        const deadlines = cases.get(kase)?.deadlines
        const found = deadlines?.get(name)
        if (deadlines === undefined || found === undefined)
          return Effect.fail(new NotFound({ what: `${kase}/${name}` }))
        deadlines.set(name, new Deadline({ ...found, state }))
        return Effect.void
      }),

    due: (now, limit) =>
      atomically((cases) =>
        Effect.succeed(
          // Inclusive: an obligation due this very second is due; a passed warning qualifies early.
          listDeadlines(
            allDeadlines(cases).filter(
              (d) =>
                isOutstanding(d.state) && (d.resolvedAt <= now || Option.exists(d.warnAt, (warnAt) => warnAt <= now)),
            ),
            limit,
          ),
        ),
      ),

    breached: (limit) =>
      atomically((cases) =>
        Effect.succeed(
          listDeadlines(
            allDeadlines(cases).filter((d) => d.state === "breached"),
            limit,
          ),
        ),
      ),

    byStatus: (status, limit) =>
      atomically((cases) =>
        Effect.succeed(
          [...cases.values()]
            .filter((row) => row.status === status)
            .sort((a, b) => compareNumber(b.openedAt, a.openedAt) || compareText(b.id, a.id))
            .slice(0, clampLimit(limit))
            .map(toCase),
        ),
      ),

    census: (now) =>
      atomically((cases) => {
        const open = [...cases.values()].filter((row) => row.status !== "closed")
        const oldest = open.reduce<Option.Option<Time.Timestamp>>(
          (min, row) => (Option.isSome(min) && min.value <= row.openedAt ? min : Option.some(row.openedAt)),
          Option.none(),
        )
        return Effect.succeed(
          new CaseCensus({
            open: open.length,
            oldestAgeSecs: Option.map(oldest, (at) => Time.ageSecs(at, now)),
            // A warning alone does not count: only the due instant.
            due: allDeadlines(cases).filter((d) => isOutstanding(d.state) && d.resolvedAt <= now).length,
          }),
        )
      }),
  })
})

/** CaseStore in memory; every build starts empty and shares nothing with another. */
export const layer: Layer.Layer<CaseStore> = Layer.effect(CaseStore, make)

// internal

interface Row {
  readonly id: CaseId
  readonly kind: string
  status: CaseStatus
  /** JSON text, as the SQL layers store it. */
  state: string
  version: number
  readonly openedAt: Time.Timestamp
  /** Every key the case ever held; `open` until the case closes. */
  readonly keys: Array<{ readonly key: CorrelationKey.CorrelationKey; open: boolean }>
  /** In attachment order. */
  readonly runs: Array<RunId>
  /** Digest → the instant it was first linked. */
  readonly blobs: Map<Digest, Time.Timestamp>
  /** By name, unique in the case. */
  readonly deadlines: Map<string, Deadline>
}

/** A fresh record, so a caller changing what it got back cannot reach the store. */
const toCase = (row: Row): Case =>
  new Case({
    id: row.id,
    kind: row.kind,
    status: row.status,
    correlation: row.keys.map((k) => k.key).sort(CorrelationKey.order),
    state: fromJsonText(row.state),
    version: CaseVersion.make(row.version),
    openedAt: row.openedAt,
    runs: [...row.runs],
  })

const copyDeadline = (d: Deadline): Deadline => new Deadline({ ...d })

/** Earliest due first; ties by case, then name, as every deadline list is ordered. */
const listDeadlines = (deadlines: ReadonlyArray<Deadline>, limit: number): ReadonlyArray<Deadline> =>
  [...deadlines]
    .sort(
      (a, b) => compareNumber(a.resolvedAt, b.resolvedAt) || compareText(a.case, b.case) || compareText(a.name, b.name),
    )
    .slice(0, clampLimit(limit))
    .map(copyDeadline)
