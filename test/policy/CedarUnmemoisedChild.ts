/**
 * The unmemoised path, in a process of its own (`CedarUnmemoised.test.ts`): cedar-wasm loaded
 * around Node's module cache, so each load instantiates a fresh WebAssembly module, and the
 * instances called in turn in a loop, the calls the engine makes (parse, validate, preparse,
 * stateful and plain authorization, policy to JSON). Prints what it did as one JSON line; a crash
 * in V8 ends the process by a signal or an abort instead.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import type * as Cedar from "@cedar-policy/cedar-wasm/nodejs"

const require = createRequire(import.meta.url)
const entry = require.resolve("@cedar-policy/cedar-wasm/nodejs")

/** A fresh instance: the cached module dropped first, so `require` evaluates the entry again. */
const fresh = (): typeof Cedar => {
  delete require.cache[entry]
  return require(entry) as typeof Cedar
}

const [loadsArg, roundsArg] = process.argv.slice(2)
const loads = Number(loadsArg ?? 8)
const rounds = Number(roundsArg ?? 200)

const schema = `namespace App { entity User; entity Doc; action "read" appliesTo { principal: User, resource: Doc, context: { n: Long } }; }`
const policies = {
  staticPolicies: {
    p0: `permit (principal, action == App::Action::"read", resource) when { context.n < 100 };`,
    p1: `forbid (principal == App::User::"mallory", action, resource);`,
  },
}
const call = (n: number, who: string) => ({
  principal: { type: "App::User", id: who },
  action: { type: "App::Action", id: "read" },
  resource: { type: "App::Doc", id: `d${n}` },
  context: { n: n % 50 },
  entities: [],
})

const check = (ok: boolean, what: string) => {
  if (!ok) throw new Error(`unexpected answer: ${what}`)
}

const instances: Array<typeof Cedar> = []
for (let i = 0; i < loads; i++) instances.push(fresh())
check(new Set(instances).size === loads, "a load came back from the cache")

let calls = 0
for (let round = 0; round < rounds; round++) {
  for (const [i, cedar] of instances.entries()) {
    const id = `set-${i}-${round % 4}`
    check(cedar.checkParsePolicySet(policies).type === "success", "checkParsePolicySet")
    check(cedar.validate({ schema, policies }).type === "success", "validate")
    check(cedar.preparsePolicySet(id, policies).type === "success", "preparsePolicySet")
    const stateful = cedar.statefulIsAuthorized({ ...call(round, "alice"), preparsedPolicySetId: id })
    check(stateful.type === "success" && stateful.response.decision === "allow", "statefulIsAuthorized")
    const plain = cedar.isAuthorized({ ...call(round, "mallory"), policies })
    check(plain.type === "success" && plain.response.decision === "deny", "isAuthorized")
    check(cedar.policyToJson(policies.staticPolicies.p1).type === "success", "policyToJson")
    calls += 6
  }
  // A fresh instance per round as well, dropped at once: what calling without the memo does.
  check(fresh().checkParsePolicySet(policies).type === "success", "a dropped instance")
  calls += 1
}

const pkg = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8")) as { version: string }
console.log(JSON.stringify({ version: pkg.version, cedar: instances[0]?.getCedarVersion(), loads, rounds, calls }))
