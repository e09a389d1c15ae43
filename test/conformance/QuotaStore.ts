/**
 * The QuotaStore battery (§5.6): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { type Backend, battery } from "../support/Backend.js"
import { admission } from "./quota/Admission.js"
import { halt } from "./quota/Halt.js"
import { races } from "./quota/Races.js"
import { spend } from "./quota/Spend.js"
import { tenancy } from "./quota/Tenancy.js"

export const suite = (backend: Backend) =>
  describe("QuotaStore", () => {
    battery(backend, (test) => {
      admission(test)
      halt(test)
      spend(test)
      tenancy(test)
      races(test, backend)
    })
  })
