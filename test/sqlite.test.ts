import { describe } from "vitest"
import * as BatchStore from "./conformance/BatchStore.js"
import * as BlobStore from "./conformance/BlobStore.js"
import * as CaseStore from "./conformance/CaseStore.js"
import * as EventStore from "./conformance/EventStore.js"
import * as JournalStore from "./conformance/JournalStore.js"
import * as LogStore from "./conformance/LogStore.js"
import * as QuotaStore from "./conformance/QuotaStore.js"
import * as TaskStore from "./conformance/TaskStore.js"
import * as TimerStore from "./conformance/TimerStore.js"
import * as RuntimeBattery from "./runtime/Battery.js"
import * as Backend from "./support/Backend.js"

describe("sqlite", () => {
  const backend = Backend.sqlite()
  CaseStore.suite(backend)
  EventStore.suite(backend)
  TimerStore.suite(backend)
  TaskStore.suite(backend)
  BatchStore.suite(backend)
  QuotaStore.suite(backend)
  JournalStore.suite(backend)
  LogStore.suite(backend)
  BlobStore.suite(backend)
  RuntimeBattery.suite(backend)
})
