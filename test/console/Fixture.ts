/**
 * A real `agentplane serve` for the console tests, on the backend's store, with two tenants:
 * A (an agent, three reviewers, alice, carl and mallory, and an operator) and B (one caller with every
 * role), the demo policy bundle, the runs of `Definitions.ts` and a sweep every second. The tests set
 * up their data through the API, as a client would; the browser then shows it.
 */
import { createHash, randomUUID } from "node:crypto"
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs"
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
  // The demo's routes, and every effect of this suite's runs permitted: the runs' policy is not
  // what the console tests look at (§7.12 decides them with the same bundle).
  const policy = mkdtempSync(join(tmpdir(), "console-policy-"))
  copyFileSync(
    join(import.meta.dirname, "..", "..", "examples", "demo-policy", "routes.cedar"),
    join(policy, "routes.cedar"),
  )
  writeFileSync(
    join(policy, "runs.cedar"),
    '@id("console test runs")\npermit (principal, action in Agentplane::Action::"effect", resource);\n',
  )
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
  return { base: server.base, tokens, scrapeToken, server }
}

export const stop = (fixture: Fixture | undefined): Promise<void> =>
  fixture === undefined ? Promise.resolve() : Serving.stop(fixture.server)

export interface Refund {
  readonly run: string
  readonly case: string
  readonly task: string
  readonly invoice: string
}

/** Starts the README's reviewed refund as the operator, proposed by `agent` (who is excluded from deciding it). */
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
