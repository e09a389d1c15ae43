/**
 * The store tags as one type: what a backend layer provides and what the runtime, the
 * HTTP API and the memory layer require, without any of them importing the SQL layer.
 */
import type { BatchStore } from "./BatchStore.js"
import type { CaseStore } from "./CaseStore.js"
import type { EventStore } from "./EventStore.js"
import type { JournalStore } from "./JournalStore.js"
import type { LogStore } from "./LogStore.js"
import type { QuotaStore } from "./QuotaStore.js"
import type { TaskStore } from "./TaskStore.js"
import type { TimerStore } from "./TimerStore.js"

export type Stores = CaseStore | EventStore | TimerStore | TaskStore | BatchStore | QuotaStore | JournalStore | LogStore
