/**
 * Every implemented store over one `SqlClient`; the backend is whichever client is provided.
 */
import type { SqlClient } from "@effect/sql"
import { Layer } from "effect"
import type { CaseStore } from "../services/CaseStore.js"
import * as CaseStoreSql from "./CaseStoreSql.js"

export type Stores = CaseStore

export const layer: Layer.Layer<Stores, never, SqlClient.SqlClient> = Layer.mergeAll(CaseStoreSql.layer)
