/**
 * Spec behaviour the runtime does not have yet: NOT registered in the battery, so main stays green.
 * Register `suite` in Battery.ts once the runtime is fixed.
 *
 * §7.11: "did_not_happen: record EffectReconciled (did_not_happen), then perform again as the next
 * attempt (a new key)". A Reconcile kind keeps the default policy (`Run.once`, one attempt), so a
 * crash after its announce leaves no attempt to perform again: the resume dies "failed after 1
 * attempt(s)", and every later resume replays the same refusal. A crash, not the provider, used
 * up the only attempt, and the run can never finish.
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as Backend from "../support/Backend.js"
import { crashAndResume } from "./Crash.js"

export const suite = (backend: Backend.Backend) =>
  describe("pending", () => {
    it.live(
      "Reconcile under the default policy: a crash after announce the probe says did not happen is performed as the next attempt",
      () =>
        Effect.gen(function* () {
          const r = yield* crashAndResume(backend, "pending.reconcile.once", {
            recovery: Run.Recovery.Reconcile(),
            point: "after_announce",
            verdict: "did_not_happen",
            retry: Run.once,
          })
          expect(r.result.status).toEqual(Run.RunStatus.Succeeded({ output: 1 }))
          expect(r.counter.get("test.crash.act")).toBe(1)
          expect(r.seen.map((a) => a.attempt)).toEqual([2])
        }).pipe(Backend.asFreshTenant),
    )
  })
