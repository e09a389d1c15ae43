/**
 * Fault injection on QuotaStore admission, PostgreSQL only (the cut is a trigger that terminates
 * the backend; see test/support/Faults.ts): a killed admission takes no slot and leaves no lock.
 */
import { describe, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { inject } from "vitest"
import { generateRunId } from "../../src/domain/Ids.js"
import * as Time from "../../src/domain/Time.js"
import { QuotaStore } from "../../src/services/QuotaStore.js"
import * as Faults from "../support/Faults.js"

const at = (seconds: number) => Time.Timestamp.make(seconds)
const limit = Option.some(2)

const scenarios = [
  Faults.scenario(
    "reserve admitting a second run under a limit of two",
    [
      Faults.before("quota_running", "INSERT"),
      Faults.after("quota_running", "INSERT"),
      Faults.atCommit("quota_running", "INSERT"),
    ],
    () => {
      const [first, second, third] = [generateRunId(), generateRunId(), generateRunId()]
      return {
        setup: Effect.flatMap(QuotaStore, (store) => store.reserve(first, limit, at(1_000))),
        run: () => Effect.flatMap(QuotaStore, (store) => store.reserve(second, limit, at(2_000))),
        observe: () => Effect.flatMap(QuotaStore, (store) => store.running()),
        // The limit still binds, and the advisory lock died with the backend (else this would hang).
        probe: () => Effect.flatMap(QuotaStore, (store) => store.reserve(third, limit, at(3_000))),
        volatile: ["tenant"],
      }
    },
  ),
]

describe("faults: QuotaStore", () => {
  layer(Faults.layer(inject("pgUrl")), { excludeTestServices: true })((it) => {
    Faults.exercise(it.effect, scenarios)
  })
})
