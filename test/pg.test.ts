import { describe, inject } from "vitest"
import * as CaseStore from "./conformance/CaseStore.js"
import * as Backend from "./support/Backend.js"

describe("postgres", () => {
  const backend = Backend.postgres(inject("pgUrl"))
  CaseStore.suite(backend)
})
