/**
 * The ceiling's client: statements sent straight through `pg` or `better-sqlite3`, with no Effect
 * and no store code in between. One small interface over both drivers, so each operation's raw
 * mirror is written once per statement text, not once per driver.
 */
import { createHash } from "node:crypto"
import Database from "better-sqlite3"
import pg from "pg"

export type Row = Record<string, unknown>
/** `named`: pg sends it as a named statement, as the store does for that statement (sqlite prepares every one). */
export type Query = (text: string, params?: ReadonlyArray<unknown>, named?: boolean) => Promise<ReadonlyArray<Row>>

export interface Raw {
  readonly dialect: "pg" | "sqlite"
  /** One statement on any free connection, as the store runs a statement outside a transaction. */
  readonly query: Query
  /**
   * A transaction on one connection: pg `BEGIN`; sqlite `BEGIN IMMEDIATE`, as `Dialect.write` does.
   * Rolled back and rethrown on failure.
   */
  readonly tx: <A>(f: (q: Query) => Promise<A>) => Promise<A>
  /** Every statement text sent, for the mirror check; off (undefined) while timing. */
  record: Array<string> | undefined
  readonly close: () => Promise<void>
}

export interface PgOptions {
  readonly url: string
  readonly size: number
  /**
   * Sends every statement as a named (server-side prepared) statement: parsed and planned once per
   * connection. `@effect/sql-pg` never names its statements; this variant measures what that costs.
   */
  readonly prepared?: boolean
}

export const pgRaw = (options: PgOptions): Raw => {
  const pool = new pg.Pool({ connectionString: options.url, max: options.size })
  pool.on("error", () => {})
  const send =
    (client: pg.Pool | pg.PoolClient, raw: Raw) =>
    async (text: string, params?: ReadonlyArray<unknown>, named?: boolean) => {
      raw.record?.push(text)
      const values = params === undefined ? [] : [...params]
      // As pg and @effect/sql-pg do: no parameters, the simple protocol; otherwise unnamed extended.
      if ((options.prepared === true || named === true) && values.length > 0) {
        const result = await client.query({ name: statementName(text), text, values })
        return result.rows as ReadonlyArray<Row>
      }
      const result = await client.query(text, values)
      return result.rows as ReadonlyArray<Row>
    }
  const raw: Raw = {
    dialect: "pg",
    record: undefined,
    query: (text, params, named) => send(pool, raw)(text, params, named),
    tx: async (f) => {
      const client = await pool.connect()
      const q = send(client, raw)
      try {
        await q("BEGIN")
        const result = await f(q)
        await q("COMMIT")
        return result
      } catch (e) {
        await client.query("ROLLBACK").catch(() => {})
        throw e
      } finally {
        client.release()
      }
    },
    close: () => pool.end(),
  }
  return raw
}

/** The same pragmas `SqliteBackend.layerClient` and `SqliteClient` set, and prepared statements cached as it caches them. */
export const sqliteRaw = (filename: string): Raw => {
  const db = new Database(filename)
  db.pragma("journal_mode = WAL")
  db.pragma("foreign_keys = ON")
  db.pragma("busy_timeout = 5000")
  const cache = new Map<string, Database.Statement>()
  const prepare = (text: string) => {
    let statement = cache.get(text)
    if (statement === undefined) {
      statement = db.prepare(text)
      cache.set(text, statement)
    }
    return statement
  }
  const raw: Raw = {
    dialect: "sqlite",
    record: undefined,
    query: async (text, params) => {
      raw.record?.push(text)
      const statement = prepare(text)
      const values = params === undefined ? [] : [...params]
      if (statement.reader) return statement.all(...values) as ReadonlyArray<Row>
      statement.run(...values)
      return []
    },
    tx: async (f) => {
      raw.record?.push("BEGIN IMMEDIATE")
      db.exec("BEGIN IMMEDIATE")
      try {
        const result = await f(raw.query)
        raw.record?.push("COMMIT")
        db.exec("COMMIT")
        return result
      } catch (e) {
        if (db.inTransaction) db.exec("ROLLBACK")
        throw e
      }
    },
    close: async () => {
      db.close()
    },
  }
  return raw
}

/** `$1, $2 …` → `?`: the same statement for better-sqlite3, whose placeholders are positional. */
export const positional = (text: string): string => text.replace(/\$\d+/g, "?")

/** The text for this raw client's dialect: pg's, or sqlite's (derived from pg's when not given). */
export const pick = (raw: Raw, pgText: string, sqliteText?: string): string =>
  raw.dialect === "pg" ? pgText : positional(sqliteText ?? pgText)

/** Inserts `rows` in multi-row statements of at most `chunk` rows (fixtures, never timed). */
export const insertRows = async (
  raw: Raw,
  table: string,
  columns: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
): Promise<void> => {
  // pg allows 65535 parameters a statement, sqlite 32766: stay well under both.
  const chunk = Math.max(1, Math.floor(30_000 / columns.length))
  for (let start = 0; start < rows.length; start += chunk) {
    const part = rows.slice(start, start + chunk)
    let n = 0
    const tuples = part.map(() => `(${columns.map(() => (raw.dialect === "pg" ? `$${++n}` : "?")).join(", ")})`)
    await raw.query(`INSERT INTO ${table} (${columns.join(", ")}) VALUES ${tuples.join(", ")}`, part.flat())
  }
}

/** A list of names as the store binds it: pg `text[]` (a JS array), sqlite JSON array text. */
export const names = (raw: Raw, values: ReadonlyArray<string>): unknown =>
  raw.dialect === "pg" ? [...values] : JSON.stringify(values)

const statementName = (text: string): string => `b${createHash("sha1").update(text).digest("hex").slice(0, 20)}`
