/**
 * DBOS Transact (`@dbos-inc/dbos-sdk`, pinned) doing the bench's two-effect run: a workflow of two
 * `DBOS.runStep` calls, each returning its input + 1, started under a workflow id of its own with
 * `DBOS.startWorkflow(…, { workflowID })` and awaited through its handle, as an application that
 * wants exactly-once admission calls it. The workflow id plays the part of agentplane's admission
 * key: a second start under the same id returns the first workflow instead of running again.
 *
 * DBOS is a process-wide singleton: `launch` configures and launches it against the given
 * PostgreSQL URL (its system database, schema `dbos`, created and migrated by DBOS on first
 * launch), with a pool of `poolSize`; `shutdown` closes its pools, so a backend's counters are
 * flushed before the bench reads `xact_commit`. One launch at a time. No OTLP, no tracing, no
 * Conductor (no key is given), logs at `error` only: the bench's output stays its own and DBOS
 * pays for no logging agentplane does not do either.
 */
import { DBOS } from "@dbos-inc/dbos-sdk"

export interface Dbos {
  /** Starts the workflow under `workflowId` with input `n` and awaits its result; rejects on any other result than n + 2. */
  readonly run: (workflowId: string, n: number) => Promise<void>
  /** Shuts DBOS down, closing its pools; safe to call twice. */
  readonly shutdown: () => Promise<void>
}

export const launch = async (url: string, poolSize: number): Promise<Dbos> => {
  const workflow = registered()
  DBOS.setConfig({
    name: "agentplane-bench-peer",
    systemDatabaseUrl: url,
    systemDatabasePoolSize: poolSize,
    logLevel: "error",
  })
  await DBOS.launch()
  let down: Promise<void> | undefined
  return {
    run: async (workflowID, n) => {
      const handle = await DBOS.startWorkflow(workflow, { workflowID })(n)
      const result = await handle.getResult()
      if (result !== n + 2) throw new Error(`DBOS workflow ${workflowID} answered ${result}, not ${n + 2}`)
    },
    shutdown: () => {
      down ??= DBOS.shutdown()
      return down
    },
  }
}

// internal

/** The workflow, registered once per process (DBOS keeps registrations across shutdown and relaunch). */
let workflow: ((n: number) => Promise<number>) | undefined

const registered = (): ((n: number) => Promise<number>) => {
  workflow ??= DBOS.registerWorkflow(
    async (n: number) => {
      const a = await DBOS.runStep(async () => n + 1, { name: "first" })
      return await DBOS.runStep(async () => a + 1, { name: "second" })
    },
    { name: "bench.two_steps" },
  )
  return workflow
}
