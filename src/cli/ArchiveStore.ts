/**
 * The stores the archive verbs open: `StoreFlag.layer`'s, plus the journal's undecoded read path
 * (`JournalArchive`) on a client of its own to the same store. `StoreFlag.layer` does not expose its
 * client, so the read path opens a second one (one more SQLite handle on the file, a one-connection
 * pool on PostgreSQL), built after the stores' layer has checked and migrated the store; until
 * `StoreFlag.layer` can provide `JournalArchive` itself, this is the seam.
 */
import { Duration, Layer, Option } from "effect"
import type { Backend } from "../errors/StoreError.js"
import * as JournalArchiveSql from "../layers/JournalArchiveSql.js"
import * as PgBackend from "../layers/PgBackend.js"
import * as SqliteBackend from "../layers/SqliteBackend.js"
import type { JournalArchive } from "../services/JournalArchive.js"
import type * as Stores from "../services/Stores.js"
import * as StoreFlag from "./StoreFlag.js"

export const layer = (
  store: string,
  timeouts: StoreFlag.Timeouts = StoreFlag.NO_TIMEOUTS,
): Layer.Layer<Stores.Stores | JournalArchive, Backend | StoreFlag.StoreInvalid> => {
  const secs = (value: Option.Option<number>) => Option.getOrUndefined(Option.map(value, Duration.seconds))
  const client = StoreFlag.isPostgres(store)
    ? PgBackend.layerClient({
        url: store,
        maxConnections: 1,
        ...defined("statementTimeout", secs(timeouts.statementTimeout)),
        ...defined("acquireTimeout", secs(timeouts.acquireTimeout)),
        ...defined("connectTimeout", secs(timeouts.connectTimeout)),
      })
    : SqliteBackend.layerClient({ filename: store, ...defined("busyTimeout", secs(timeouts.busyTimeout)) })
  const stores = StoreFlag.layer(store, timeouts)
  // provideMerge: the stores' layer (which checks `store` and migrates it) is built first.
  return Layer.provideMerge(JournalArchiveSql.layer.pipe(Layer.provide(client)), stores)
}

// internal

const defined = <K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: V }
