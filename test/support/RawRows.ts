/**
 * A store's rows read behind the stores' back, for tests that assert what is at rest (sealed or
 * in the clear) rather than what the API answers.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Keys from "../../src/cli/Keys.js"

/** Every row of `tables` in `store`, each column as text (bytes decoded as UTF-8). */
export const rawText = (store: string, tables: ReadonlyArray<string>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.forEach(tables, (table) => sql.unsafe<Record<string, unknown>>(`SELECT * FROM ${table}`)),
    ).pipe(
      Effect.map((all) =>
        all
          .flat()
          .flatMap((row) =>
            Object.values(row).map((v) =>
              v instanceof Uint8Array ? Buffer.from(v).toString("utf8") : JSON.stringify(v),
            ),
          )
          .join("\n"),
      ),
      Effect.scoped,
      Effect.provide(Keys.client(store)),
    ) as Effect.Effect<string>,
  )
