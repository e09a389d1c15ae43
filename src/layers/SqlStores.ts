/**
 * Every implemented store over one `SqlClient`; the backend is whichever client is provided.
 */
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { Stores } from "../services/Stores.js"
import * as BatchStoreSql from "./BatchStoreSql.js"
import * as CaseStoreSql from "./CaseStoreSql.js"
import * as EventStoreSql from "./EventStoreSql.js"
import * as JournalStoreSql from "./JournalStoreSql.js"
import * as LogStoreSql from "./LogStoreSql.js"
import * as QuotaStoreSql from "./QuotaStoreSql.js"
import * as TaskStoreSql from "./TaskStoreSql.js"
import * as TimerStoreSql from "./TimerStoreSql.js"

export type { Stores }

export const layer: Layer.Layer<Stores, never, SqlClient.SqlClient> = Layer.mergeAll(
  CaseStoreSql.layer,
  EventStoreSql.layer,
  TimerStoreSql.layer,
  TaskStoreSql.layer,
  BatchStoreSql.layer,
  QuotaStoreSql.layer,
  JournalStoreSql.layer,
  LogStoreSql.layer,
)
