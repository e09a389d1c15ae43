/**
 * Bulk fixtures for the growth runs, written server-side (pg `generate_series`, sqlite a recursive
 * CTE) so a million rows per table take seconds. Every table of a read grows to the same row
 * count; what the reads look for is a fixed live set, and what grows is history, plus the awkward
 * shapes a live system has: claimed but not disarmed timers, and dead tuples at the head of each
 * queue (1% of the table: the dead-tuple share at which the hot tables' autovacuum setting, scale
 * factor 0.01, starts a VACUUM, so the worst that autovacuum leaves standing).
 */

import { NOW } from "./Op.js"
import { JUSTIFICATION } from "./ops/TaskOps.js"
import type { Raw } from "./Raw.js"

export const TENANT = "growth"

/** Live rows per family, fixed at every size: the working set a read is about. */
export const LIVE = 500
/** Of the live events, how many are dead letters: a full page of `deadLetters` at every size. */
export const LIVE_DEAD = 100
/**
 * Due timers, the same number at every size (seeded with the first): every timed `claimDue` is
 * followed by a disarm and a refill, as in use. Adding this many at each size, as this once did,
 * tripled the due set by 1M rows, and SQLite's claim sorts the whole due set: that grows with the
 * sweeper's backlog, not with the table, and is no index miss.
 */
export const DUE_TIMERS = 500

/** The tables the growth reads touch, in the order they are seeded. */
export const TABLES = [
  "cases",
  "case_correlation",
  "case_runs",
  "case_deadlines",
  "timers",
  "tasks",
  "inbound_events",
  "inbound_correlation",
] as const

type Kind = "live" | "history" | "churn"

/** Grows every family from `from` rows to `to` rows (from 0: the live set first). */
export const grow = async (raw: Raw, from: number, to: number, log: (line: string) => void): Promise<void> => {
  const d = dialect(raw)
  const churn = Math.max(1, Math.floor(to / 100))
  let next = from === 0 ? 1 : from + 1
  const ranges: Array<readonly [Kind, number, number]> = []
  const take = (kind: Kind, n: number) => {
    if (n <= 0) return
    ranges.push([kind, next, next + n - 1])
    next += n
  }
  if (from === 0) take("live", LIVE)
  take("churn", churn)
  take("history", to - next + 1)
  for (const [kind, lo, hi] of ranges) {
    const started = Date.now()
    await cases(raw, d, kind, lo, hi)
    await tasks(raw, d, kind, lo, hi)
    await events(raw, d, kind, lo, hi)
    log(
      `  seeded ${kind} ${lo}…${hi} of cases, deadlines, tasks, events in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    )
  }
  const started = Date.now()
  await timers(raw, d, from, to, next)
  log(`  seeded timers to ${to} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

// internal

interface Dialect {
  /** `insert` + `select … FROM <series i = lo … hi>`. */
  readonly series: (insert: string, select: string, lo: number, hi: number) => string
  readonly id: (prefix: string) => string
  readonly hex: string
  readonly digest: string
  readonly names: (values: ReadonlyArray<string>) => string
  readonly sep: string
}

const dialect = (raw: Raw): Dialect =>
  raw.dialect === "pg"
    ? {
        series: (insert, select, lo, hi) => `${insert} ${select} FROM generate_series(${lo}, ${hi}) AS g(i)`,
        id: (prefix) => `'${prefix}_' || lpad(i::text, 26, '0')`,
        hex: "lpad(to_hex(i), 64, '0')",
        digest: "decode(repeat('ab', 32), 'hex')",
        names: (values) => `ARRAY[${values.map((v) => `'${v}'`).join(", ")}]::text[]`,
        sep: "chr(31)",
      }
    : {
        series: (insert, select, lo, hi) =>
          `WITH RECURSIVE g(i) AS (SELECT ${lo} UNION ALL SELECT i + 1 FROM g WHERE i < ${hi}) ${insert} ${select} FROM g`,
        id: (prefix) => `printf('${prefix}_%026d', i)`,
        hex: "printf('%064x', i)",
        digest: "zeroblob(32)",
        names: (values) => `'${JSON.stringify(values)}'`,
        sep: "char(31)",
      }

const T = `'${TENANT}'`

/** Cases with one key, one run and one deadline each. Live: open, 200 deadlines due, 300 ahead. */
const cases = async (raw: Raw, d: Dialect, kind: Kind, lo: number, hi: number) => {
  const status = kind === "history" ? "'closed'" : "'open'"
  // Churn is newest (the head of byStatus) and earliest due (the head of due): then retired.
  const openedAt = kind === "live" ? `${NOW} - (i - ${lo})` : kind === "churn" ? `${NOW} + 1 + i` : `${NOW} - 1000000`
  await raw.query(
    d.series(
      "INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at)",
      `SELECT ${T}, ${d.id("case")}, 'claim', ${status}, 'null', 0, ${openedAt}`,
      lo,
      hi,
    ),
  )
  await raw.query(
    d.series(
      "INSERT INTO case_correlation (tenant, case_id, namespace, value, open)",
      `SELECT ${T}, ${d.id("case")}, 'claim', 'k' || i, ${kind === "history" ? "FALSE" : "TRUE"}`,
      lo,
      hi,
    ),
  )
  await raw.query(
    d.series(
      "INSERT INTO case_runs (tenant, case_id, run_id, seq)",
      `SELECT ${T}, ${d.id("case")}, ${d.id("run")}, 0`,
      lo,
      hi,
    ),
  )
  const [state, resolvedAt, warnAt] =
    kind === "live"
      ? [
          "'pending'",
          `CASE WHEN i - ${lo} < 200 THEN ${NOW} - 1 - (i - ${lo}) ELSE ${NOW} + 86400 + i END`,
          `CASE WHEN i - ${lo} < 200 THEN NULL ELSE ${NOW} + 3600 + i END`,
        ]
      : kind === "churn"
        ? ["'pending'", `${NOW} - 6000000 + i`, "NULL"]
        : [`CASE i % 10 WHEN 9 THEN 'breached' WHEN 8 THEN 'cancelled' ELSE 'met' END`, `${NOW} - 5000000 + i`, "NULL"]
  await raw.query(
    d.series(
      "INSERT INTO case_deadlines (tenant, case_id, name, resolved_at, calendar_digest, warn_at, state)",
      `SELECT ${T}, ${d.id("case")}, 'reply', ${resolvedAt}, ${d.digest}, ${warnAt}, ${state}`,
      lo,
      hi,
    ),
  )
  if (kind === "churn") {
    const range = `tenant = ${T} AND case_id BETWEEN '${caseText(lo)}' AND '${caseText(hi)}'`
    await raw.query(`UPDATE cases SET status = 'closed' WHERE ${range}`)
    await raw.query(`UPDATE case_correlation SET open = FALSE WHERE ${range}`)
    await raw.query(`UPDATE case_deadlines SET state = 'met' WHERE ${range}`)
  }
}

/** Tasks. Live: queued at every rank (1 in 7 for another role), a fifth claimed, half overdue. */
const tasks = async (raw: Raw, d: Dialect, kind: Kind, lo: number, hi: number) => {
  const k = `(i - ${lo})`
  const columns = {
    live: {
      state: `CASE ${k} % 5 WHEN 3 THEN 'escalated' WHEN 4 THEN 'claimed' ELSE 'open' END`,
      assignee: `CASE ${k} % 5 WHEN 4 THEN 'bob' ELSE NULL END`,
      priority: `CASE ${k} % 4 WHEN 0 THEN 'urgent' WHEN 1 THEN 'high' WHEN 2 THEN 'normal' ELSE 'low' END`,
      roles: `CASE WHEN ${k} % 7 = 0 THEN ${d.names(["other"])} ELSE ${d.names(["reviewer"])} END`,
      created: `${NOW} - ${k}`,
      due: `CASE WHEN ${k} % 2 = 0 THEN ${NOW} - 100 - ${k} ELSE NULL END`,
    },
    // Decided long ago; half had a window, so they still carry a due instant.
    history: {
      state: `CASE i % 2 WHEN 0 THEN 'completed' ELSE 'expired' END`,
      assignee: "NULL",
      priority: "'normal'",
      roles: d.names(["reviewer"]),
      created: `${NOW} - 1000000`,
      due: `CASE WHEN i % 2 = 0 THEN ${NOW} - 2000000 + (i % 100000) ELSE NULL END`,
    },
    // The most pressing and oldest, then decided: dead tuples at the head of the queue.
    churn: {
      state: "'open'",
      assignee: "NULL",
      priority: "'urgent'",
      roles: d.names(["reviewer"]),
      created: `${NOW} - 3000000 + i`,
      due: `${NOW} - 3000000 + i`,
    },
  }[kind]
  await raw.query(
    d.series(
      "INSERT INTO tasks (tenant, task_id, run_id, case_id, kind, justification, candidate_roles, escalate_to, excluded_actors, assignee, priority, state, on_expiry, created_at, due_at)",
      `SELECT ${T}, ${d.hex}, ${d.id("run")}, NULL, 'approve-refund', '${JUSTIFICATION}', ${columns.roles}, ${d.names([])}, ${d.names([])}, ${columns.assignee}, ${columns.priority}, ${columns.state}, 'deny', ${columns.created}, ${columns.due}`,
      lo,
      hi,
    ),
  )
  if (kind === "churn") {
    await raw.query(
      `UPDATE tasks SET state = 'completed' WHERE tenant = ${T} AND task_id BETWEEN '${hexText(lo)}' AND '${hexText(hi)}'`,
    )
  }
}

/**
 * Events with one key each. Live: unclaimed, except `LIVE_DEAD` dead letters just older than the
 * churn, so deadLetters' page of 100 is full at every size (at 1k the churn and history held 35:
 * a third of the page, which made the 1k figure cheaper by the rows it did not decode). History:
 * claimed and erased, one in 20 dead-lettered.
 */
const events = async (raw: Raw, d: Dialect, kind: Kind, lo: number, hi: number) => {
  const dead = kind === "churn" ? "TRUE" : kind === "history" ? "i % 20 = 0" : `i - ${lo} < ${LIVE_DEAD}`
  const claimed = kind === "history" ? `CASE WHEN i % 20 = 0 THEN NULL ELSE ${d.id("run")} END` : "NULL"
  // Churn is the newest dead letters (the head of deadLetters), then erased.
  // Live dead letters sit below the churn's `received_at` (at least NOW - 1499) and its erasure.
  const received =
    kind === "live"
      ? `CASE WHEN i - ${lo} < ${LIVE_DEAD} THEN ${NOW} - 2000 - (i - ${lo}) ELSE ${NOW} - (i - ${lo}) END`
      : kind === "churn"
        ? `${NOW} - 1000 - (i % 500)`
        : `${NOW} - 10000000 + i`
  await raw.query(
    d.series(
      "INSERT INTO inbound_events (tenant, event_id, source, bare_id, kind, payload, received_at, claimed_by, claimed_at, dead, dead_reason)",
      `SELECT ${T}, 'bench' || ${d.sep} || i, 'bench', '' || i, 'paid', ${kind === "history" ? "'null'" : `'{"amount":100}'`}, ${received}, ${claimed}, CASE WHEN ${claimed} IS NULL THEN NULL ELSE ${NOW} END, ${dead}, CASE WHEN ${dead} THEN 'unclaimed' ELSE NULL END`,
      lo,
      hi,
    ),
  )
  await raw.query(
    d.series(
      "INSERT INTO inbound_correlation (tenant, event_id, namespace, value)",
      `SELECT ${T}, 'bench' || ${d.sep} || i, 'order', 'o' || i`,
      lo,
      hi,
    ),
  )
  if (kind === "churn") {
    await raw.query(
      `UPDATE inbound_events SET payload = 'null' WHERE tenant = ${T} AND dead AND received_at >= ${NOW - 1500}`,
    )
  }
}

/**
 * Timers: the first size seeds the `DUE_TIMERS` due ones; each size adds 1% claimed but not yet
 * disarmed (held for the lease), 1% due and then disarmed (deleted: dead tuples at the head of the
 * due range), and the rest armed for later.
 */
const timers = async (raw: Raw, d: Dialect, from: number, to: number, start: number) => {
  const insert =
    "INSERT INTO timers (tenant, run_id, effect_key, case_id, step, phase, fire_at, claimed_at, claimable_at)"
  const row = (fireAt: string, claimedAt: string, claimableAt: string) =>
    `SELECT ${T}, ${d.id("run")}, ${d.hex}, NULL, 0, 'forward', ${fireAt}, ${claimedAt}, ${claimableAt}`
  const onePercent = Math.max(1, Math.floor(to / 100))
  let lo = start
  const add = async (n: number, select: string) => {
    if (n <= 0) return
    await raw.query(d.series(insert, select, lo, lo + n - 1))
    lo += n
  }
  const due = `${NOW} - 10 - (i % 600)`
  if (from === 0) await add(DUE_TIMERS, row(due, "NULL", due))
  await add(onePercent, row(`${NOW} - 20 - (i % 600)`, `${NOW}`, `${NOW} + 60`))
  const disarmed = lo
  await add(onePercent, row(`${NOW} - 700 - (i % 600)`, "NULL", `${NOW} - 700 - (i % 600)`))
  await raw.query(
    `DELETE FROM timers WHERE tenant = ${T} AND run_id BETWEEN '${runText(disarmed)}' AND '${runText(lo - 1)}'`,
  )
  const [current] = await raw.query(`SELECT COUNT(*) AS n FROM timers WHERE tenant = ${T}`)
  const later = `${NOW} + 3600 + i`
  await add(to - Number(current?.n ?? from), row(later, "NULL", later))
}

/**
 * What follows a claim in use: the claimed timers fire and are disarmed (deleted, leaving dead
 * tuples), and as many new due timers arrive, so the due set stays the size it was.
 */
export const disarmAndRefill = async (raw: Raw, runs: ReadonlyArray<string>): Promise<void> => {
  if (runs.length === 0) return
  const d = dialect(raw)
  let n = 0
  const marks = runs.map(() => (raw.dialect === "pg" ? `$${++n}` : "?"))
  await raw.query(`DELETE FROM timers WHERE tenant = ${T} AND run_id IN (${marks.join(", ")})`, runs)
  const lo = refill
  refill += runs.length
  const due = `${NOW} - 10 - (i % 600)`
  await raw.query(
    d.series(
      "INSERT INTO timers (tenant, run_id, effect_key, case_id, step, phase, fire_at, claimed_at, claimable_at)",
      `SELECT ${T}, ${d.id("run")}, ${d.hex}, NULL, 0, 'forward', ${due}, NULL, ${due}`,
      lo,
      refill - 1,
    ),
  )
}

// Refills are numbered far above any seeded timer.
let refill = 900_000_000

const caseText = (i: number) => `case_${String(i).padStart(26, "0")}`
const runText = (i: number) => `run_${String(i).padStart(26, "0")}`
const hexText = (i: number) => i.toString(16).padStart(64, "0")
