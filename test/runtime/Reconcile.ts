/**
 * §7.11: "did_not_happen: record EffectReconciled (did_not_happen), then perform again as the next
 * attempt (a new key)", even under a one-attempt policy: a crash, not the provider, interrupted
 * the first attempt, so it used up nothing (it once left such a run failing on every resume).
 */
import { describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { expect } from "vitest"
import * as Run from "../../src/domain/Run.js"
import * as Backend from "../support/Backend.js"
import { crashAndResume } from "./Crash.js"

export const suite = (backend: Backend.Backend) =>
  describe("reconcile", () => {
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
