/**
 * `npm run agent`'s session (`examples/dispute/Session.ts`): with a provider that fails every
 * request, the session ends with the run's failure, naming the provider's error, and does not go
 * on to a strict replay (which answered `ReplayOverrun` and hid the error); with the scripted
 * provider it still ends with the replay's verdict.
 */
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { inject } from "vitest"
import type * as Dispute from "../../examples/dispute/Dispute.js"
import { session } from "../../examples/dispute/Session.js"
import * as ScriptedModel from "../../src/agent/ScriptedModel.js"
import * as Tenant from "../../src/domain/Tenant.js"
import { assert } from "../support/Assert.js"

const input = (): Dispute.Input => ({
  invoice: `INV-${randomUUID()}`,
  customer: "ACME GmbH",
  complaint: "charged twice",
  disputedMinor: 3_000,
})

const onFreshStore = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.provideService(Tenant.Tenant, Tenant.DEFAULT),
    Effect.withConfigProvider(
      ConfigProvider.fromMap(new Map([["AGENTPLANE_STORE", join(inject("scratchDir"), `agent-${randomUUID()}.db`)]])),
    ),
  )

const config = { model: "scripted", system: "scripted", prices: {} }

describe("the dispute agent's session", () => {
  it.live("with a failing provider ends with the provider's error, never a replay overrun", () =>
    Effect.gen(function* () {
      const payments = { calls: 0, refunds: new Map<string, string>() }
      // No replies: every request fails as a provider's would, with the provider's own words.
      const failed = yield* Effect.flip(onFreshStore(session(config, ScriptedModel.layer([]), payments, input())))
      assert.strictEqual(failed._tag, "AgentFailed")
      assert.match(
        failed.message,
        /^step classify: .*model\.generate.*the script has 0 replies and was asked for reply 1/,
      )
      assert.strictEqual(payments.calls, 0)
    }),
  )

  it.live("with a provider that answers ends with the strict replay's verdict", () =>
    Effect.gen(function* () {
      const payments = { calls: 0, refunds: new Map<string, string>() }
      const dispute = input()
      const script: ReadonlyArray<ScriptedModel.Reply> = [
        ScriptedModel.object(
          { category: "duplicate_charge", action: "refund", refundMinor: 3_000, justification: "twice" },
          { inputTokens: 1, outputTokens: 1 },
        ),
        {
          toolCalls: [{ name: "issue_refund", params: { invoice: dispute.invoice, amountMinor: 3_000 } }],
          usage: { inputTokens: 1, outputTokens: 1 },
        },
        { text: "Refunded.", usage: { inputTokens: 1, outputTokens: 1 } },
      ]
      const reproduced = yield* onFreshStore(session(config, ScriptedModel.layer(script), payments, dispute))
      assert.strictEqual(payments.calls, 1)
      assert.isTrue(reproduced)
    }),
  )
})
