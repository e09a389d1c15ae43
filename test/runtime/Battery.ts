/**
 * The runtime's battery (§7.1–§7.5): one entry point, split by area, run on every backend.
 */
import { afterEach, describe, expect } from "vitest"
import * as Agents from "../agent/Agents.js"
import type * as Backend from "../support/Backend.js"
import * as Admission from "./Admission.js"
import * as Attempts from "./Attempts.js"
import * as Budget from "./Budget.js"
import * as Cancel from "./Cancel.js"
import * as CaseState from "./CaseState.js"
import * as ConclusionLogs from "./ConclusionLogs.js"
import * as Crash from "./Crash.js"
import * as Decide from "./Decide.js"
import * as Mcp from "./Mcp.js"
import * as Patched from "./Patched.js"
import * as Policy from "./Policy.js"
import * as Property from "./Property.js"
import * as Protocol from "./Protocol.js"
import * as Races from "./Races.js"
import * as Reconcile from "./Reconcile.js"
import * as Replay from "./Replay.js"
import * as ReplayGate from "./ReplayGate.js"
import * as ReplayProperty from "./ReplayProperty.js"
import * as Saga from "./Saga.js"
import * as Status from "./Status.js"
import * as StepEnds from "./StepEnds.js"
import * as Targeted from "./Targeted.js"
import * as TaskObligation from "./TaskObligation.js"
import * as TimerLeases from "./TimerLeases.js"
import * as UnknownVersion from "./UnknownVersion.js"
import * as ViewDecisions from "./ViewDecisions.js"
import * as WaitCrashes from "./WaitCrashes.js"
import * as WaitEdges from "./WaitEdges.js"
import * as Waits from "./Waits.js"
import * as WakeCommit from "./WakeCommit.js"
import * as WakeRaces from "./WakeRaces.js"
import * as WakeRelease from "./WakeRelease.js"
import * as Witness from "./Witness.js"
import * as Worklist from "./Worklist.js"

export const suite = (backend: Backend.Backend) =>
  describe("Runtime", () => {
    // §7.11, for every act of every test below: its announcement was durable before it began.
    afterEach(() => {
      expect(Witness.take().breaches).toEqual([])
    })
    Protocol.suite(backend)
    Attempts.suite(backend)
    Crash.suite(backend)
    Replay.suite(backend)
    Patched.suite(backend)
    UnknownVersion.suite(backend)
    ReplayGate.suite(backend)
    ReplayProperty.suite(backend)
    StepEnds.suite(backend)
    Status.suite(backend)
    ConclusionLogs.suite(backend)
    Saga.suite(backend)
    Budget.suite(backend)
    Cancel.suite(backend)
    Admission.suite(backend)
    CaseState.suite(backend)
    Races.suite(backend)
    Property.suite(backend)
    Policy.suite(backend)
    ViewDecisions.suite(backend)
    Reconcile.suite(backend)
    Waits.suite(backend)
    Worklist.suite(backend)
    TaskObligation.suite(backend)
    WaitEdges.suite(backend)
    WakeRaces.suite(backend)
    Targeted.suite(backend)
    WakeCommit.suite(backend)
    WakeRelease.suite(backend)
    TimerLeases.suite(backend)
    Decide.suite(backend)
    WaitCrashes.suite(backend)
    Agents.suite(backend)
    Mcp.suite(backend)
  })
