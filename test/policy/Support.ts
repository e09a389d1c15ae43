/**
 * The policy tests' shared pieces: the refund bundle (`test/policy/refunds`: `*.cedar` policies
 * and the `*.cedarschema` declaring its effect kinds) and requests written the way the runtime
 * will ask them.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Either } from "effect"
import type { Json } from "../../src/domain/Json.js"
import { Context, PolicyRequest, Principal } from "../../src/domain/PolicyRequest.js"
import { TenantId } from "../../src/domain/Tenant.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../../src/policy/Bundle.js"
import { assert } from "../support/Assert.js"

export const REFUNDS = join("test", "policy", "refunds")

/** The files of the refund bundle, by name. */
export const refundFiles = (): ReadonlyMap<string, string> =>
  new Map(readdirSync(REFUNDS).map((name) => [name, readFileSync(join(REFUNDS, name), "utf8")]))

/** A bundle of the refund files, with `edit` applied to the text of each. */
export const refunds = (edit: (name: string, text: string) => string = (_, text) => text): Bundle.Bundle => {
  const files = [...refundFiles()]
  return Bundle.make(
    REFUNDS,
    files.filter(([n]) => n.endsWith(".cedar")).map(([name, text]) => ({ name, text: edit(name, text) })),
    files.filter(([n]) => n.endsWith(".cedarschema")).map(([name, text]) => edit(name, text)),
  )
}

/** `bundle` loaded; the test fails if it is refused. */
export const loaded = (bundle: Bundle.Bundle = refunds()): PolicyEngineCedar.Loaded =>
  Either.getOrElse(PolicyEngineCedar.load(bundle), (e) => assert.fail(e.message))

/** A run of the refund agent asking to take `action` with `args` on a case, its step's inputs labelled `label`. */
export const request = (
  action: string,
  args: Json,
  label: "trusted" | "untrusted",
  options: { readonly mutates?: boolean; readonly provenances?: ReadonlyArray<string> } = {},
): PolicyRequest =>
  new PolicyRequest({
    principal: new Principal({
      capability: "refund-agent",
      governedBy: "payments-team",
      tenant: TenantId.make("acme"),
      admittedBy: "alice",
      roles: [],
    }),
    action,
    resource: { _tag: "Case", id: "case_01JDEMO" },
    context: new Context({
      mutates: options.mutates ?? true,
      phase: "forward",
      args,
      label,
      provenances: options.provenances ?? (label === "untrusted" ? ["event:email.received"] : []),
    }),
  })
