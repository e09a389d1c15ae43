import { describe } from "vitest"
import * as CaseStore from "./conformance/CaseStore.js"
import * as Backend from "./support/Backend.js"

describe("sqlite", () => {
  const backend = Backend.sqlite()
  CaseStore.suite(backend)
})
