/**
 * CaseStore over `SqlClient`: one implementation for PostgreSQL and SQLite, the statement texts
 * shared, their differences `Dialect`'s. Opening a case is settled by the open-key index on pg
 * and by the write lock on sqlite; closing and attaching lock the case row (`Dialect.write`).
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Either, Layer, Option, Schema } from "effect"
import { Case, CaseCensus, Correlation } from "../domain/Case.js"
import * as CorrelationKey from "../domain/CorrelationKey.js"
import type { Deadline } from "../domain/Deadline.js"
import type { Digest } from "../domain/Digest.js"
import { CaseId, CaseVersion, generateCaseId, type RunId } from "../domain/Ids.js"
import * as Json from "../domain/Json.js"
import { Tenant } from "../domain/Tenant.js"
import * as Time from "../domain/Time.js"
import {
  Backend,
  CaseConflict,
  type Corrupt,
  ImportRefused,
  NotFound,
  ObligationsOutstanding,
} from "../errors/StoreError.js"
import { CaseStore } from "../services/CaseStore.js"
import {
  BlobRow,
  CaseRow,
  CensusRow,
  CountRow,
  DeadlineRow,
  NextRow,
  RunRow,
  SeqRow,
  toDeadline,
  VersionRow,
} from "./internal/CaseRows.js"
import { decodeRows, digestParam } from "./internal/Columns.js"
import * as Dialect from "./internal/Dialect.js"
import * as Sql from "./internal/Sql.js"

export const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const dialect = yield* Sql.make

  // internal: statements shared by several verbs

  /** The open holders of `n` keys: one statement text per key count, compiled once. */
  const holdersOf = Dialect.perCount((n: number) =>
    dialect.query(HolderRow, "case_correlation", { named: true })(
      ...Dialect.parts([
        "SELECT case_id, namespace, value FROM case_correlation WHERE tenant = ",
        0,
        " AND open AND ",
        ...keyMatch(n),
      ]),
    ),
  )

  /** The open holders of `keys` (at least one): one statement, compiled once per key count. */
  const holders = (tenant: string, keys: ReadonlyArray<CorrelationKey.CorrelationKey>) => {
    const params: Array<string> = [tenant]
    for (const k of keys) params.push(k.namespace, k.value)
    return holdersOf(keys.length)(...params)
  }

  /** The open cases holding any of `keys`, answered in the caller's key order. */
  const lookup = (tenant: string, keys: ReadonlyArray<CorrelationKey.CorrelationKey>) =>
    keys.length === 0
      ? Effect.succeed(Option.none<CaseId>())
      : Effect.map(holders(tenant, keys), (rows) => firstHolder(keys, rows))

  const insertCase = dialect.command({ named: true })`
    INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at)
    VALUES (${0}, ${1}, ${2}, 'open', 'null', 0, ${3})`

  /**
   * pg: a new case and its keys in one statement, written only if none of the keys is held as
   * the statement's snapshot sees them. Two openers of one key both see it free; the open-key
   * index `case_correlation_open` lets one commit and fails the other's whole statement (its
   * case row included, so no case is left without its keys). The keys' foreign-key check runs
   * at the statement's end, when the case row it names is there.
   */
  const openAtOnce = Dialect.perCount((n: number) =>
    dialect.query(OpenedRow, "cases", { named: true })(
      ...Dialect.parts([
        "WITH held AS (SELECT case_id FROM case_correlation WHERE tenant = ",
        0,
        " AND open AND ",
        ...keyMatch(n),
        " LIMIT 1), opened AS (INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at) SELECT ",
        0,
        ", ",
        2 * n + 1,
        ", ",
        2 * n + 2,
        ", 'open', 'null', 0, CAST(",
        2 * n + 3,
        " AS BIGINT) WHERE NOT EXISTS (SELECT 1 FROM held) RETURNING case_id), keyed AS (INSERT INTO case_correlation (tenant, case_id, namespace, value) SELECT ",
        0,
        ", opened.case_id, k.namespace, k.value FROM opened, (VALUES ",
        ...Dialect.tuples(n, (i) => [1 + 2 * i, 2 + 2 * i]),
        ") AS k (namespace, value) RETURNING case_id) SELECT (SELECT case_id FROM held) AS held, (SELECT case_id FROM keyed LIMIT 1) AS opened",
      ]),
    ),
  )

  /**
   * One attempt to open a case for `keys`: the case, or none when a concurrent opener of one of
   * the keys won (the caller looks again). sqlite: lookup and inserts under the write lock, which
   * no other opener can hold meanwhile, so nothing collides.
   */
  const openCase = (tenant: string, kind: string, keys: ReadonlyArray<CorrelationKey.CorrelationKey>, at: number) => {
    const id = generateCaseId()
    const opened: Option.Option<Correlation> = Option.some(Correlation.Opened({ case: id }))
    if (dialect.writableCte && keys.length > 0) {
      return openAtOnce(keys.length)(tenant, ...keys.flatMap((k) => [k.namespace, k.value]), id, kind, at).pipe(
        Effect.map(([row]) => (row?.opened === id ? opened : Option.none<Correlation>())),
        Sql.catchSql(Sql.isUniqueViolation, () => Effect.succeed(Option.none<Correlation>())),
      )
    }
    const written = Effect.as(insertCase(tenant, id, kind, at), opened)
    return dialect.write(
      Effect.flatMap(
        lookup(tenant, keys),
        (held): Effect.Effect<Option.Option<Correlation>, SqlError> =>
          Option.isSome(held)
            ? Effect.succeed(Option.some(Correlation.Attached({ case: held.value })))
            : keys.length === 0
              ? written
              : Effect.zipRight(
                  written,
                  Effect.as(
                    insertKeys(keys.length)(...keys.flatMap((k) => [tenant, id, k.namespace, k.value])),
                    opened,
                  ),
                ),
      ),
    )
  }

  /** `n` keys of one case in one statement: tenant, case, namespace, value for each. */
  const insertKeys = Dialect.perCount((n: number) =>
    dialect.command({ named: true })(
      ...Dialect.parts([
        "INSERT INTO case_correlation (tenant, case_id, namespace, value) VALUES ",
        ...Dialect.tuples(n, (i) => [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]),
      ]),
    ),
  )

  /**
   * The held key's case, else a new one: looked up before any write transaction (attaching
   * writes nothing, and the holder a transaction would read is the one this plain read sees: pg
   * read committed locks no row for a read; sqlite reads the last commit either way), and opened
   * on a miss. Two lost opens and a third miss mean someone is opening and closing this key as
   * fast as we can look.
   */
  const attachOrOpen = (
    tenant: string,
    kind: string,
    keys: ReadonlyArray<CorrelationKey.CorrelationKey>,
    at: number,
    attempt: number,
  ): Effect.Effect<Correlation, SqlError | Corrupt | Backend> =>
    Effect.flatMap(keys.length === 0 ? NO_ROWS : holders(tenant, keys), (rows) => {
      const held = firstHolder(keys, rows)
      if (Option.isSome(held)) return Effect.succeed(Correlation.Attached({ case: held.value }))
      if (attempt === 2) {
        return Effect.fail(
          new Backend({
            detail: `could not open or attach a case for ${keys.join(", ")}: the key is being opened and closed concurrently`,
          }),
        )
      }
      return Effect.flatMap(openCase(tenant, kind, keys, at), (result) =>
        Option.isSome(result) ? Effect.succeed(result.value) : attachOrOpen(tenant, kind, keys, at, attempt + 1),
      )
    })

  const putVersion = dialect.command({ named: true })`
    UPDATE cases SET state = ${0}, version = ${1}
     WHERE tenant = ${2} AND case_id = ${3} AND version = ${4}
    RETURNING version`

  const nextOf = dialect.query(NextRow, "cases", { named: true })`
    SELECT runs_next FROM cases WHERE tenant = ${0} AND case_id = ${1} ${dialect.forUpdate}`

  const placeRun = dialect.query(SeqRow, "case_runs", { named: true })`
    INSERT INTO case_runs (tenant, case_id, run_id, seq) VALUES (${0}, ${1}, ${2}, ${3})
    ON CONFLICT (tenant, case_id, run_id) DO NOTHING
    RETURNING seq`

  const bumpNext = dialect.command({ named: true })`
    UPDATE cases SET runs_next = ${0} WHERE tenant = ${1} AND case_id = ${2} RETURNING runs_next`

  /**
   * First registration stands: `resolvedAt` is fixed once and never recomputed. Compiled once:
   * a run registers its obligations on every admission. Parameters: tenant, case, name,
   * resolved at, calendar digest, warn at, state.
   */
  const insertDeadline = dialect.command({ named: true })`
    INSERT INTO case_deadlines (tenant, case_id, name, resolved_at, calendar_digest, warn_at, state)
    VALUES (${0}, ${1}, ${2}, ${3}, ${4}, ${5}, ${6})
    ON CONFLICT (tenant, case_id, name) DO NOTHING`

  const deadlinesOf = dialect.query(DeadlineRow, "case_deadlines", { named: true })`
    SELECT case_id, name, resolved_at, calendar_digest, warn_at, state FROM case_deadlines
     WHERE tenant = ${0} AND case_id = ${1}
     ORDER BY resolved_at, name`

  const versionOf = dialect.query(VersionRow, "cases", { named: true })`
    SELECT version FROM cases WHERE tenant = ${0} AND case_id = ${1}`

  /** Assembles cases from their rows, keeping the order of `rows`: three statements for a whole page. */
  const assemble = (tenant: string, rows: ReadonlyArray<typeof CaseRow.Type>) =>
    Effect.gen(function* () {
      if (rows.length === 0) return []
      const ids = rows.map((r) => r.case_id)
      const keys = yield* sql`
        SELECT case_id, namespace, value FROM case_correlation
         WHERE tenant = ${tenant} AND ${sql.in("case_id", ids)}`.pipe(
        Effect.flatMap(decodeRows(HolderRow, "case_correlation")),
      )
      const runs = yield* sql`
        SELECT case_id, run_id FROM case_runs
         WHERE tenant = ${tenant} AND ${sql.in("case_id", ids)}
         ORDER BY case_id, seq`.pipe(Effect.flatMap(decodeRows(RunRow, "case_runs")))
      return rows.map(
        (row) =>
          new Case({
            id: row.case_id,
            kind: row.kind,
            status: row.status,
            state: row.state,
            version: row.version,
            openedAt: row.opened_at,
            // Sorted here, by code point, so the order never depends on a database collation.
            correlation: keys
              .filter((k) => k.case_id === row.case_id)
              .map((k) => CorrelationKey.make(k.namespace, k.value))
              .sort(CorrelationKey.order),
            runs: runs.filter((r) => r.case_id === row.case_id).map((r) => r.run_id),
          }),
      )
    })

  const selectCases = (tenant: string, where: Fragment, order: string, limit: number) =>
    sql`
      SELECT case_id, kind, status, state, version, opened_at FROM cases
       WHERE tenant = ${tenant} AND ${where}
       ORDER BY ${sql.literal(order)} LIMIT ${limit}`.pipe(Effect.flatMap(decodeRows(CaseRow, "cases")))

  const readCases = (where: Fragment, order: string, limit: number) =>
    Effect.gen(function* () {
      const tenant = yield* Tenant
      const n = Sql.clampLimit(limit)
      if (n === 0) return []
      return yield* dialect.read(Effect.flatMap(selectCases(tenant, where, order, n), (rows) => assemble(tenant, rows)))
    }).pipe(Sql.orBackend)

  const selectDeadlines = (tenant: string, where: Fragment, limit: number) =>
    sql`
      SELECT case_id, name, resolved_at, calendar_digest, warn_at, state FROM case_deadlines
       WHERE tenant = ${tenant} AND ${where}
       ORDER BY resolved_at, case_id, name LIMIT ${limit}`.pipe(
      Effect.flatMap(decodeRows(DeadlineRow, "case_deadlines")),
      Effect.map((rows) => rows.map(toDeadline)),
    )

  /** Runs a child insert whose parent case may be missing: the foreign key says so, and we say `NotFound`. */
  const parentMustExist = (kase: CaseId) =>
    Sql.catchSql(Sql.isForeignKeyViolation, () => Effect.fail(new NotFound({ what: kase })))

  const close = (kase: CaseId) =>
    Effect.gen(function* () {
      const tenant = yield* Tenant
      yield* dialect.write(
        Effect.gen(function* () {
          // pg: the row lock makes a concurrent `registerDeadline` (whose foreign-key check takes a
          // KEY SHARE lock on this row) wait for us, or us for it, so the count below is final.
          const found = yield* sql`
            SELECT case_id FROM cases WHERE tenant = ${tenant} AND case_id = ${kase}
            ${sql.literal(dialect.forUpdate)}`
          if (found.length === 0) return yield* new NotFound({ what: kase })
          const [count] = yield* sql`
            SELECT COUNT(*) AS n FROM case_deadlines
             WHERE tenant = ${tenant} AND case_id = ${kase} AND state IN ('pending', 'warned')`.pipe(
            Effect.flatMap(decodeRows(CountRow, "case_deadlines")),
          )
          const outstanding = count?.n ?? 0
          // An unmet obligation outlives nobody's attention: closing is when people stop looking.
          if (outstanding > 0) return yield* new ObligationsOutstanding({ case: kase, outstanding })
          yield* sql`UPDATE cases SET status = 'closed' WHERE tenant = ${tenant} AND case_id = ${kase}`
          // Released keys let the next message with such a key open a fresh matter.
          yield* sql`
            UPDATE case_correlation SET open = FALSE
             WHERE tenant = ${tenant} AND case_id = ${kase} AND open`
        }),
      )
    }).pipe(Sql.orBackend)

  return CaseStore.of({
    correlate: Sql.verb((tenant, keys: ReadonlyArray<CorrelationKey.CorrelationKey>) => lookup(tenant, keys)),

    correlateOrOpen: Sql.verb(
      (tenant, kind: string, offered: ReadonlyArray<CorrelationKey.CorrelationKey>, at: Time.Timestamp) =>
        // A key offered twice is one key; inserted twice it would trip the primary key and look
        // like a lost race.
        attachOrOpen(tenant, kind, CorrelationKey.dedupe(offered), at, 0),
    ),

    case: (id) => Effect.map(readCases(sql`case_id = ${id}`, "case_id", 1), (found) => Option.fromNullable(found[0])),

    cases: (after, limit) =>
      readCases(
        Option.match(after, {
          onNone: () => sql`TRUE`,
          onSome: (cursor) => sql`case_id > ${cursor}`,
        }),
        "case_id ASC",
        limit,
      ),

    importCase: (kase, deadlines, blobs) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const refuse = (detail: string) => new ImportRefused({ case: kase.id, detail })
        const invalid = validateImport(kase, deadlines, blobs)
        if (Option.isSome(invalid)) return yield* refuse(invalid.value)
        const open = kase.status !== "closed"
        const state = yield* encodeJson(kase.state)
        yield* dialect
          .write(
            Effect.gen(function* () {
              // Refused, never upserted: a restore rebuilds a case layer, it does not merge one.
              const inserted = yield* sql`
              INSERT INTO cases (tenant, case_id, kind, status, state, version, opened_at, runs_next)
              VALUES (${tenant}, ${kase.id}, ${kase.kind}, ${kase.status}, ${state}, ${kase.version}, ${kase.openedAt},
                      ${kase.runs.length})
              ON CONFLICT (tenant, case_id) DO NOTHING
              RETURNING case_id`
              if (inserted.length === 0) return yield* refuse("a case with this id already exists")
              if (open && kase.correlation.length > 0) {
                const held = yield* lookup(tenant, kase.correlation)
                if (Option.isSome(held)) {
                  return yield* refuse(`an open key is held by open case ${held.value}`)
                }
              }
              // Keys are open iff the case is, written so in the insert itself: inserted open and
              // closed later, a closed case's keys would meet `case_correlation_open` and refuse an
              // import that holds nothing. A literal, because better-sqlite3 binds no booleans.
              for (const k of kase.correlation) {
                yield* sql`
                INSERT INTO case_correlation (tenant, case_id, namespace, value, open)
                VALUES (${tenant}, ${kase.id}, ${k.namespace}, ${k.value}, ${sql.literal(open ? "TRUE" : "FALSE")})`
              }
              if (kase.runs.length > 0) {
                yield* sql`INSERT INTO case_runs ${sql.insert(
                  kase.runs.map((run, seq) => ({ tenant, case_id: kase.id, run_id: run, seq })),
                )}`
              }
              if (deadlines.length > 0) {
                yield* sql`INSERT INTO case_deadlines ${sql.insert(
                  deadlines.map((d) => ({
                    tenant,
                    case_id: kase.id,
                    name: d.name,
                    resolved_at: d.resolvedAt,
                    calendar_digest: digestParam(d.calendarDigest),
                    warn_at: Option.getOrNull(d.warnAt),
                    state: d.state,
                  })),
                )}`
              }
              if (blobs.length > 0) {
                // The export carries digests, not link times; `openedAt + index` keeps their order.
                yield* sql`INSERT INTO case_blobs ${sql.insert(
                  blobs.map((digest, i) => ({
                    tenant,
                    case_id: kase.id,
                    digest: digestParam(digest),
                    written_at: kase.openedAt + i,
                  })),
                )}`
              }
            }),
          )
          .pipe(
            // Another open case took one of the keys between our look and our insert.
            Sql.catchSql(Sql.isUniqueViolation, () => Effect.fail(refuse("an open key is held by another open case"))),
          )
      }).pipe(Sql.orBackend),

    attachRun: Sql.verb((tenant, kase: CaseId, run: RunId) =>
      // The position is read from the case row under its lock (pg `FOR UPDATE`, sqlite's write
      // lock), so attaches to one case queue and never compute the same one: no retry is needed.
      // `case_runs_order` stays the last line, and a collision there would be `Backend`; the ON
      // CONFLICT names the primary key only, so it absorbs nothing but the repeat attach.
      dialect.write(
        Effect.gen(function* () {
          const [found] = yield* nextOf(tenant, kase)
          if (found === undefined) return yield* new NotFound({ what: kase })
          // `runs_next` is the position to hand out: every insert path keeps it past MAX(seq),
          // and it remembers positions a detached run spent, which MAX + 1 alone forgets.
          const [placed] = yield* placeRun(tenant, kase, run, found.runs_next)
          if (placed !== undefined && (yield* bumpNext(placed.seq + 1, tenant, kase)) === 0) {
            return yield* new Backend({ detail: `the position of case ${kase} was not written` })
          }
        }),
      ),
    ),

    detachRun: (kase, run) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // The position stays spent (`cases.runs_next` keeps the mark), and the gap is honest.
        const removed = yield* sql`
          DELETE FROM case_runs WHERE tenant = ${tenant} AND case_id = ${kase} AND run_id = ${run}
          RETURNING run_id`
        return removed.length > 0
      }).pipe(Sql.orBackend),

    linkBlob: (kase, digest, at) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Identical bytes are one artifact: the first link and its time stand.
        yield* sql`
          INSERT INTO case_blobs (tenant, case_id, digest, written_at)
          VALUES (${tenant}, ${kase}, ${digestParam(digest)}, ${at})
          ON CONFLICT (tenant, case_id, digest) DO NOTHING`.pipe(parentMustExist(kase))
      }).pipe(Sql.orBackend),

    blobsOf: (kase) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const rows = yield* sql`
          SELECT digest FROM case_blobs WHERE tenant = ${tenant} AND case_id = ${kase}
           ORDER BY written_at, digest`.pipe(Effect.flatMap(decodeRows(BlobRow, "case_blobs")))
        return rows.map((r) => r.digest)
      }).pipe(Sql.orBackend),

    putState: Sql.verb((tenant, kase: CaseId, expected: CaseVersion, state: Json.Json) =>
      Effect.gen(function* () {
        const text = yield* encodeJson(state)
        const next = CaseVersion.make(expected + 1)
        // The version check is part of the write: of N writers holding one version, one matches.
        if ((yield* putVersion(text, next, tenant, kase, expected)) > 0) return next
        // Tell "gone" from "moved on": a missing case reported as a conflict sends the caller
        // into a re-read loop against nothing.
        const [current] = yield* versionOf(tenant, kase)
        if (current === undefined) return yield* new NotFound({ what: kase })
        return yield* new CaseConflict({ case: kase, expected, current: current.version })
      }),
    ),

    setStatus: (kase, status) =>
      status === "closed"
        ? close(kase)
        : Effect.gen(function* () {
            const tenant = yield* Tenant
            const written = yield* sql`
              UPDATE cases SET status = ${status} WHERE tenant = ${tenant} AND case_id = ${kase}
              RETURNING case_id`
            if (written.length === 0) return yield* new NotFound({ what: kase })
          }).pipe(Sql.orBackend),

    close,

    registerDeadline: (d) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        yield* insertDeadline(
          tenant,
          d.case,
          d.name,
          d.resolvedAt,
          digestParam(d.calendarDigest),
          Option.getOrNull(d.warnAt),
          d.state,
        ).pipe(parentMustExist(d.case))
      }).pipe(Sql.orBackend),

    deadlines: (kase) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        return (yield* deadlinesOf(tenant, kase)).map(toDeadline)
      }).pipe(Sql.orBackend),

    setDeadlineState: (kase, name, state) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const written = yield* sql`
          UPDATE case_deadlines SET state = ${state}
           WHERE tenant = ${tenant} AND case_id = ${kase} AND name = ${name}
          RETURNING name`
        if (written.length === 0) return yield* new NotFound({ what: `${kase}/${name}` })
      }).pipe(Sql.orBackend),

    due: (now, limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        // Inclusive: an obligation due this very second is due. A passed warning qualifies
        // before the due instant, so the sweep can warn.
        return yield* selectDeadlines(
          tenant,
          sql`state IN ('pending', 'warned') AND (resolved_at <= ${now} OR warn_at <= ${now})`,
          n,
        )
      }).pipe(Sql.orBackend),

    breached: (limit) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        const n = Sql.clampLimit(limit)
        if (n === 0) return []
        // A breach is a recorded state, not a clock comparison, and it outlives its case's closing.
        return yield* selectDeadlines(tenant, sql`state = 'breached'`, n)
      }).pipe(Sql.orBackend),

    byStatus: (status, limit) => readCases(sql`status = ${status}`, "opened_at DESC, case_id DESC", limit),

    census: (now) =>
      Effect.gen(function* () {
        const tenant = yield* Tenant
        // Counted in SQL, never from a limited list: a gauge that stops at a page size lies.
        const [row] = yield* sql`
          SELECT
            (SELECT COUNT(*) FROM cases WHERE tenant = ${tenant} AND status <> 'closed') AS open,
            (SELECT MIN(opened_at) FROM cases WHERE tenant = ${tenant} AND status <> 'closed') AS oldest,
            (SELECT COUNT(*) FROM case_deadlines
              WHERE tenant = ${tenant} AND state IN ('pending', 'warned') AND resolved_at <= ${now}) AS due`.pipe(
          Effect.flatMap(decodeRows(CensusRow, "census")),
        )
        if (row === undefined) return yield* new Backend({ detail: "census returned no row" })
        return new CaseCensus({
          open: row.open,
          oldestAgeSecs: Option.map(row.oldest, (oldest) => Time.ageSecs(oldest, now)),
          due: row.due,
        })
      }).pipe(Sql.orBackend),
  })
})

/** CaseStore on whichever `SqlClient` is provided: `@effect/sql-pg` or `@effect/sql-sqlite-node`. */
export const layer: Layer.Layer<CaseStore, never, SqlClient.SqlClient> = Layer.effect(CaseStore, make)

// internal

const HolderRow = Schema.Struct({ case_id: CaseId, namespace: Schema.String, value: Schema.String })

const NO_ROWS = Effect.succeed<ReadonlyArray<typeof HolderRow.Type>>([])

/** The holder of the first of `keys` that any row holds. */
const firstHolder = (
  keys: ReadonlyArray<CorrelationKey.CorrelationKey>,
  rows: ReadonlyArray<typeof HolderRow.Type>,
): Option.Option<CaseId> => {
  for (const key of keys) {
    const hit = rows.find((r) => r.namespace === key.namespace && r.value === key.value)
    if (hit !== undefined) return Option.some(hit.case_id)
  }
  return Option.none()
}
const OpenedRow = Schema.Struct({ held: Schema.NullOr(CaseId), opened: Schema.NullOr(CaseId) })

/** `(namespace = ? AND value = ?)` for each of `n` keys, their parameters from 1 on, joined by OR. */
const keyMatch = (n: number): ReadonlyArray<string | number> => {
  const each = Array.from({ length: n }, (_, i) => ["(namespace = ", 1 + 2 * i, " AND value = ", 2 + 2 * i, ")"])
  return n === 1 ? (each[0] ?? []) : ["(", ...each.flatMap((e, i) => (i === 0 ? e : [" OR ", ...e])), ")"]
}

/** JSON text for a state; a value with no JSON form (NaN, undefined) is a caller's bug, not data to store. */
const encodeJson = (value: Json.Json) =>
  Either.match(Json.stringify(value), {
    onLeft: (detail) => Effect.dieMessage(`case state must be JSON: ${detail}`),
    onRight: Effect.succeed,
  })

/** What an import must satisfy before anything is written; the reason when it does not. */
const validateImport = (
  kase: Case,
  deadlines: ReadonlyArray<Deadline>,
  blobs: ReadonlyArray<Digest>,
): Option.Option<string> => {
  const foreign = deadlines.find((d) => d.case !== kase.id)
  if (foreign !== undefined) return Option.some(`deadline ${JSON.stringify(foreign.name)} belongs to ${foreign.case}`)
  const names = deadlines.map((d) => d.name)
  if (new Set(names).size !== names.length) return Option.some("two deadlines share a name")
  if (new Set(kase.runs).size !== kase.runs.length) return Option.some("a run is listed twice")
  if (CorrelationKey.dedupe(kase.correlation).length !== kase.correlation.length) {
    return Option.some("a correlation key is listed twice")
  }
  if (new Set(blobs).size !== blobs.length) return Option.some("a blob digest is listed twice")
  return Option.none()
}
