/**
 * What a store call sends: every statement's compiled text and parameters, and which transaction
 * it ran in, read through @effect/sql's statement transformer. The transformer sees each statement
 * just before it is compiled and sent, on the driver's own path, so what it records is exactly
 * what the database receives; transaction boundaries come from the `TransactionConnection` in the
 * statement's context, whose value is a fresh tuple per transaction.
 */
import { SqlClient, Statement } from "@effect/sql"
import { Context, Effect, FiberRef, FiberRefs, Option } from "effect"

export interface Captured {
  readonly text: string
  readonly params: ReadonlyArray<unknown>
  /** Which transaction of this capture the statement ran in (1, 2 …); 0 outside any. */
  readonly tx: number
}

/** Runs `effect`, returning its result and the statements it sent, in order. */
export const capture = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const statements: Array<Captured> = []
    const transactions = new WeakMap<object, number>()
    let seen = 0
    const transformer: Statement.Statement.Transformer = (self, _sql, refs) =>
      Effect.sync(() => {
        const context = FiberRefs.getOrDefault(refs, FiberRef.currentContext)
        const held = Context.getOption(context, SqlClient.TransactionConnection)
        let tx = 0
        if (Option.isSome(held)) {
          const key = held.value as unknown as object
          const known = transactions.get(key)
          if (known === undefined) transactions.set(key, ++seen)
          tx = known ?? seen
        }
        const [text, params] = self.compile()
        statements.push({ text, params, tx })
        return self
      })
    return Effect.map(Statement.withTransformer(effect, transformer), (result) => ({ result, statements }))
  })

/**
 * The statement sequence with the transaction boundaries written in, as a raw client sends it:
 * `BEGIN`, the statements, `COMMIT`. Whitespace is collapsed, since it changes nothing the
 * database does and the store's template literals are indented.
 */
export const script = (statements: ReadonlyArray<Captured>): ReadonlyArray<string> => {
  const out: Array<string> = []
  let open = 0
  for (const s of statements) {
    if (s.tx !== open) {
      if (open !== 0) out.push("COMMIT")
      if (s.tx !== 0) out.push("BEGIN")
      open = s.tx
    }
    out.push(normalize(s.text))
  }
  if (open !== 0) out.push("COMMIT")
  return out
}

/** Collapses whitespace runs (and the space inside parentheses) so indentation never differs. */
export const normalize = (text: string): string =>
  text.replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")").trim()
