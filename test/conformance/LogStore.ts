/**
 * The LogStore battery (§6.5): every contract sentence, run against any backend.
 */
import { describe } from "@effect/vitest"
import { type Backend, battery } from "../support/Backend.js"
import { instances } from "./log/Instances.js"
import { integrate } from "./log/Integrate.js"
import { proofs } from "./log/Proofs.js"
import { signEmpty } from "./log/SignEmpty.js"

export const suite = (backend: Backend) =>
  describe("LogStore", () => {
    battery(backend, (test, sql) => {
      integrate(test)
      signEmpty(test, sql, backend)
      proofs(test)
      instances(test, backend)
    })
  })
