/**
 * A real `agentplane serve` for the console tests, on the backend's store, with two tenants:
 * A (an agent, three reviewers, alice, carl and mallory, and an operator) and B (one caller with every
 * role), the demo routes with a policy for the runs of `Definitions.ts`, and a sweep every second. The tests set
 * up their data through the API, as a client would; the browser then shows it.
 */
import { createHash, randomUUID } from "node:crypto"
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Serving from "../runtime-process/Serving.js"

export interface Backend {
  readonly name: string
  /** A store for one server: a fresh SQLite file, or the run's PostgreSQL database. */
  readonly store: () => string
}

export const CALLERS = ["agent", "alice", "carl", "mallory", "ops", "bea"] as const
export type CallerName = (typeof CALLERS)[number]

export interface Fixture {
  readonly base: string
  readonly tokens: Readonly<Record<CallerName, string>>
  readonly scrapeToken: string
  readonly server: Serving.Server
  /** The policy bundle's directory, written for this server and removed by `stop`. */
  readonly policy: string
}

const digest = (token: string) => createHash("sha256").update(token).digest("hex")

/** Starts `serve` with `extra` arguments (e.g. `--no-console`). */
export const start = async (backend: Backend, extra: ReadonlyArray<string> = []): Promise<Fixture> => {
  const a = `t-console-a-${randomUUID()}`
  const b = `t-console-b-${randomUUID()}`
  const tokens = Object.fromEntries(CALLERS.map((name) => [name, `tok-${name}-${randomUUID()}`])) as Record<
    CallerName,
    string
  >
  const entries = [
    { digest: digest(tokens.agent), tenant: a, actor: "invoice-bot", roles: ["agent"] },
    { digest: digest(tokens.alice), tenant: a, actor: "alice", roles: ["reviewer"] },
    { digest: digest(tokens.carl), tenant: a, actor: "carl", roles: ["reviewer"] },
    { digest: digest(tokens.mallory), tenant: a, actor: "mallory", roles: ["reviewer"] },
    { digest: digest(tokens.ops), tenant: a, actor: "ops", roles: ["admin"] },
    { digest: digest(tokens.bea), tenant: b, actor: "bea", roles: ["agent", "reviewer", "admin"] },
  ]
  const scrapeToken = `scrape-${randomUUID()}`
  // The demo's routes, and every effect of this suite's runs permitted but `decided`'s sends, one
  // refused and one held for a reviewer, so the pages have policy decisions to show (§7.12
  // decides the runs with the same bundle).
  const policy = mkdtempSync(join(tmpdir(), "console-policy-"))
  copyFileSync(
    join(import.meta.dirname, "..", "..", "examples", "demo-policy", "routes.cedar"),
    join(policy, "routes.cedar"),
  )
  writeFileSync(join(policy, "runs.cedar"), RUNS_POLICY)
  writeFileSync(join(policy, "runs.cedarschema"), RUNS_SCHEMA)
  const server = await Serving.start(
    [
      "--store",
      backend.store(),
      "--runs",
      "test/console/Definitions.ts",
      "--sweep-every",
      "1",
      "--metrics-token-digest",
      digest(scrapeToken),
      "--log-level",
      "warning",
      ...extra,
    ],
    { AGENTPLANE_TOKENS_JSON: JSON.stringify(entries), AGENTPLANE_POLICY: policy },
  )
  return { base: server.base, tokens, scrapeToken, server, policy }
}

export const stop = (fixture: Fixture | undefined): Promise<void> =>
  fixture === undefined
    ? Promise.resolve()
    : Serving.stop(fixture.server).finally(() => rmSync(fixture.policy, { recursive: true, force: true }))

/** What `decided`'s sends are told: the refusal's reason and the approval's. */
export const BLOCKED = "blocked recipients are refused"
export const EYES = "a send needs a second pair of eyes"

const RUNS_POLICY = `@id("console test runs")
permit (principal, action in Agentplane::Action::"effect", resource);

@id("releases")
permit (principal, action == Agentplane::Action::"agentplane.release", resource);

@id("blocked recipients")
@reason("${BLOCKED}")
forbid (principal, action == Action::"console-test.send", resource)
when { context.argsJson == "{\\"to\\":\\"blocked\\"}" };

@id("sends need a reviewer")
@approval("reviewer")
@reason("${EYES}")
permit (principal, action == Action::"console-test.send", resource)
when { context.argsJson == "{\\"to\\":\\"ann\\"}" };
`

const RUNS_SCHEMA = `action "console-test.send" in [Agentplane::Action::"effect"] appliesTo {
  principal: Agentplane::Agent,
  resource: [Agentplane::Case, Agentplane::Run],
  context: Agentplane::EffectContext,
};
`

export interface Refund {
  readonly run: string
  readonly case: string
  readonly task: string
  readonly invoice: string
}

/** Starts the README tour's reviewed refund as the operator, proposed by `agent` (who is excluded from deciding it). */
export const startRefund = async (f: Fixture, agent = "invoice-bot"): Promise<Refund> => {
  const invoice = `INV-${randomUUID().slice(0, 8)}`
  const started = await Serving.expectCall(201, f.base, "POST", "/runs", f.tokens.ops, {
    capability: "refund.reviewed",
    input: { invoice, amountMinor: 4000, invoiceTotalMinor: 12000, reason: "charged twice", agent, coolingOffSecs: 1 },
    case: { kind: "invoice-dispute", correlation: [{ namespace: "invoice", value: invoice }] },
  })
  const suspended = started.suspended as { correlation: ReadonlyArray<{ value: string }> }
  // The wait's key is the task id's hex; the API shows the id as `task_<hex>`.
  return {
    run: started.run as string,
    case: started.case as string,
    task: `task_${suspended.correlation[0]?.value ?? ""}`,
    invoice,
  }
}

/** Claims `task` for `who` through the API. */
export const claim = (f: Fixture, who: CallerName, task: string) =>
  Serving.expectCall(200, f.base, "POST", `/tasks/${task}/claim`, f.tokens[who])

/** Starts a `drifts` run and resumes it with its event, answering its id once it is quarantined. */
export const quarantinedRun = async (f: Fixture): Promise<string> => {
  const ticket = `T-${randomUUID().slice(0, 8)}`
  const started = await Serving.expectCall(201, f.base, "POST", "/runs", f.tokens.ops, {
    capability: "console-test.drifts",
    input: { ticket },
    case: { kind: "ticket", correlation: [{ namespace: "ticket", value: ticket }] },
  })
  const run = started.run as string
  await Serving.expectCall(202, f.base, "POST", "/events", f.tokens.agent, {
    id: `go-${ticket}`,
    kind: "console-test.go",
    correlation: [{ namespace: "ticket", value: ticket }],
  })
  await outcome(f, run, "quarantined")
  return run
}

/** Starts a `decided` run as the operator; it waits for the reviewer's approval of its second send. */
export const decidedRun = async (f: Fixture): Promise<{ readonly run: string; readonly task: string }> => {
  const ticket = `T-${randomUUID().slice(0, 8)}`
  const started = await Serving.expectCall(201, f.base, "POST", "/runs", f.tokens.ops, {
    capability: "console-test.decided",
    input: { ticket },
    case: { kind: "ticket", correlation: [{ namespace: "ticket", value: ticket }] },
  })
  const decisions = started.decisions as ReadonlyArray<{ readonly _tag: string; readonly task?: string | null }>
  const tags = decisions.map((d) => d._tag).join(", ")
  if (tags !== "Denied, Released, Approval") throw new Error(`decided run's decisions: ${tags}`)
  return { run: started.run as string, task: decisions[2]?.task ?? "" }
}

/** Waits until `run`'s outcome is `wanted`, for as long as its journal keeps growing. */
export const outcome = async (f: Fixture, run: string, wanted: string): Promise<void> => {
  const read = () => Serving.expectCall(200, f.base, "GET", `/runs/${run}`, f.tokens.ops)
  await Serving.whileProgressing(
    `run ${run} to be ${wanted}`,
    30_000,
    async () => (await read()).outcome === wanted,
    async () => (await read()).head,
  )
}
