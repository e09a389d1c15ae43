/**
 * The README tour's refund with the sweep run from cron instead of inside the server:
 * `serve --runs` without `--sweep-every`, and `agentplane sweep --runs` from a shell loop. A
 * reviewer decides the task over HTTP, the run sleeps out its cooling-off, a later tick of the
 * loop fires the timer and the run refunds, meets its obligations and closes its case. Every
 * tick's standard output is one JSON document. On a SQLite file both processes share, and on
 * PostgreSQL.
 */
import { randomUUID } from "node:crypto"
import { describe, it } from "vitest"
import * as Serving from "../runtime-process/Serving.js"
import { assert } from "../support/Assert.js"
import { cli, postgres, serve, sqlite } from "../support/Cli.js"

const RUNS = "examples/refund/Serve.ts"

for (const backend of [sqlite, postgres]) {
  describe(`the refund walkthrough with sweep --runs from cron (${backend.name})`, () => {
    it("serve without --sweep-every, a shell loop of sweep --runs: the refund finishes and the case closes", {
      timeout: 240_000,
    }, async () => {
      const { store, drop } = await backend.make()
      // The agent proposing the refund is `invoice-bot`; the reviewer `alice` may decide it.
      const t = Serving.tenancy("invoice-bot")
      // The tenancy's bundle decides the routes and the runs alike.
      const policy = t.policy
      const server = serve(["--store", store, "--addr", "127.0.0.1:0", "--runs", RUNS, "--policy", policy], {
        AGENTPLANE_TOKENS_JSON: t.tokensJson,
      })
      try {
        const base = await server.address
        const invoice = `INV-${randomUUID().slice(0, 8)}`
        const started = await Serving.expectCall(201, base, "POST", "/runs", t.reviewer, {
          capability: "refund.reviewed",
          admissionKey: `refund-${invoice}`,
          input: {
            invoice,
            amountMinor: 4000,
            invoiceTotalMinor: 12000,
            reason: "charged twice for one order",
            agent: "invoice-bot",
            coolingOffSecs: 1,
          },
          case: { kind: "invoice-dispute", correlation: [{ namespace: "invoice", value: invoice }] },
        })
        const run = started.run as string
        const kase = started.case as string
        const suspended = started.suspended as { correlation: ReadonlyArray<{ value: string }> }
        const task = suspended.correlation[0]?.value as string
        await Serving.expectCall(200, base, "POST", `/tasks/${task}/claim`, t.reviewer)
        await Serving.expectCall(200, base, "POST", `/tasks/${task}/decide`, t.reviewer, {
          approved: true,
          reason: "two captures for one order",
        })

        // The cron line, once a second: nothing in the server sweeps, so only these ticks fire the
        // cooling-off timer; each prints one JSON report.
        let view = await Serving.expectCall(200, base, "GET", `/runs/${run}`, t.reviewer)
        const fired: Array<number> = []
        for (let tick = 0; tick < 60 && view.outcome !== "succeeded"; tick++) {
          await new Promise((resolve) => setTimeout(resolve, 1000))
          // The bundle `serve` took: the woken run goes on under the policy it was admitted under.
          const swept = await cli(
            ["sweep", "--store", store, "--tenant", t.tenant, "--runs", RUNS, "--policy", policy],
            {
              AGENTPLANE_SQLITE_BUSY_TIMEOUT: "60",
            },
          )
          const report = JSON.parse(swept.stdout) as { timersFired: number; wakeFailures: number }
          assert.strictEqual(report.wakeFailures, 0, swept.stdout)
          fired.push(report.timersFired)
          view = await Serving.expectCall(200, base, "GET", `/runs/${run}`, t.reviewer)
        }
        assert.strictEqual(view.outcome, "succeeded", JSON.stringify(view))
        // One timer, fired by one tick.
        assert.strictEqual(
          fired.reduce((a, b) => a + b, 0),
          1,
        )
        const read = await Serving.expectCall(200, base, "GET", `/cases/${kase}`, t.reviewer)
        const kaseView = read.case as { status: string }
        assert.strictEqual(kaseView.status, "closed")
        const deadlines = (read.deadlines as ReadonlyArray<{ name: string; state: string }>).map((d) => d.state)
        assert.deepStrictEqual(deadlines, ["met", "met"])
      } finally {
        server.child.kill("SIGTERM")
        await server.done
        await drop()
      }
    })
  })
}
