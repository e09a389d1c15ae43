/**
 * The routes decided by a Cedar bundle (`CedarAuthorizer`) and the JSON route policy written as
 * Cedar (`CedarTranslation`): the demo's JSON policy translated, and the demo bundle's routes,
 * each decide every route exactly as the JSON list does for every combination of roles; a forbid on one case refuses that case only;
 * a route a policy wants approved is refused, saying so; an engine fault is a 500, never an allow.
 */
import { readFileSync } from "node:fs"
import { describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer } from "effect"
import { TenantId } from "../../src/domain/Tenant.js"
import { PolicyUnavailable } from "../../src/errors/PolicyError.js"
import { Action, Authorizer } from "../../src/http/Authorizer.js"
import { Caller } from "../../src/http/Caller.js"
import * as CedarAuthorizer from "../../src/http/CedarAuthorizer.js"
import * as CedarTranslation from "../../src/http/CedarTranslation.js"
import * as JsonPolicy from "../../src/http/JsonPolicy.js"
import * as PolicyEngineCedar from "../../src/layers/PolicyEngineCedar.js"
import * as Bundle from "../../src/policy/Bundle.js"
import { PolicyEngine } from "../../src/services/PolicyEngine.js"
import { assert } from "../support/Assert.js"

/** The demo's route policy as the JSON allow list it was before the demo bundle: the reference both must match. */
const demo = Either.getOrThrow(
  JsonPolicy.decode(
    {
      allow: [
        { action: "api:event.deliver", roles: ["agent"] },
        { action: "api:case.*", roles: ["reviewer", "admin"] },
        { action: "api:obligation.list", roles: ["reviewer", "admin"] },
        { action: "api:task.*", roles: ["reviewer"] },
        { action: "api:run.*", roles: ["reviewer", "admin"] },
        { action: "api:log.read", roles: ["reviewer", "admin"] },
        { action: "api:deadletter.list", roles: ["admin"] },
        { action: "api:census.read", roles: ["admin"] },
        { action: "api:admin.*", roles: ["admin"] },
        // GET /policy came with the bundle; the demo lets admins read it.
        { action: "api:policy.read", roles: ["admin"] },
      ],
    },
    "the demo's JSON policy",
  ),
)

/** The demo bundle's route policies, as `serve --policy examples/demo-policy` reads them. */
const demoRoutes = readFileSync("examples/demo-policy/routes.cedar", "utf8")

const caller = (roles: ReadonlyArray<string>) =>
  new Caller({ tenant: TenantId.make("acme"), actor: "someone", roles: [...roles] })

const authorizerOf = (text: string) =>
  CedarAuthorizer.layer.pipe(
    Layer.provide(PolicyEngineCedar.layer(Bundle.make("test", [{ name: "routes.cedar", text }]))),
  )

/** Whether the authoriser lets `who` take `action` (on `resource`), and its refusal's message. */
const decide = (who: Caller, action: Action, resource?: string) =>
  Effect.flatMap(Authorizer, (a) => Effect.exit(a.authorize(who, action, resource)))

const subsets = <A>(items: ReadonlyArray<A>): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: 2 ** items.length }, (_, mask) => items.filter((_, i) => (mask & (1 << i)) !== 0))

describe("CedarAuthorizer", () => {
  /** Every action for every set of the demo's roles (and one it lacks) decided as the JSON list decides it. */
  const decidesAsDemo = Effect.gen(function* () {
    let allowed = 0
    for (const roles of subsets(["agent", "reviewer", "admin", "stranger"])) {
      for (const action of Action.literals) {
        const who = caller(roles)
        const exit = yield* decide(who, action, "case_01JDEMO")
        const expected = JsonPolicy.allows(demo, who, action)
        assert.strictEqual(Exit.isSuccess(exit), expected, `${action} for [${roles.join(", ")}]`)
        if (expected) allowed++
      }
    }
    // The comparison covered both answers.
    assert.isTrue(allowed > 0 && allowed < 16 * Action.literals.length)
  })

  it.effect(
    "the demo's JSON policy translated to Cedar decides every route as the JSON does, for every set of roles",
    () => decidesAsDemo.pipe(Effect.provide(authorizerOf(CedarTranslation.translate(demo)))),
  )

  it.effect("the demo bundle's routes decide every route as the demo's JSON policy did, for every set of roles", () =>
    decidesAsDemo.pipe(Effect.provide(authorizerOf(demoRoutes))),
  )

  it.effect("a forbid naming one case refuses that case with its reason and leaves the others", () =>
    Effect.gen(function* () {
      const reviewer = caller(["reviewer"])
      const held = yield* decide(reviewer, "api:case.read", "case_HELD")
      const other = yield* decide(reviewer, "api:case.read", "case_OTHER")
      const list = yield* decide(reviewer, "api:case.list")
      assert.isTrue(Exit.isSuccess(other) && Exit.isSuccess(list))
      assert.isTrue(Exit.isFailure(held))
      if (Exit.isFailure(held)) assert.isTrue(String(held.cause).includes("legal hold"))
    }).pipe(
      Effect.provide(
        authorizerOf(`
permit (principal in Agentplane::Role::"reviewer", action in Agentplane::Action::"api", resource);
@reason("case under legal hold")
forbid (principal, action == Agentplane::Action::"api:case.read", resource == Agentplane::Case::"case_HELD");
`),
      ),
    ),
  )

  it.effect("a route a policy wants approved is refused, naming the roles: a request cannot wait for a person", () =>
    Effect.gen(function* () {
      const exit = yield* decide(caller(["operator"]), "api:admin.halt")
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.isTrue(String(exit.cause).includes("Forbidden"))
        assert.isTrue(String(exit.cause).includes("needs approval by admin"))
      }
    }).pipe(
      Effect.provide(
        authorizerOf(`
@approval("admin")
@reason("an emergency stop needs a second person")
permit (principal in Agentplane::Role::"operator", action == Agentplane::Action::"api:admin.halt", resource);
`),
      ),
    ),
  )

  it.effect("an engine that cannot decide refuses with AuthorizerUnavailable, never allows", () =>
    Effect.gen(function* () {
      const exit = yield* decide(caller(["admin"]), "api:run.list")
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.isTrue(String(exit.cause).includes("AuthorizerUnavailable"))
    }).pipe(
      Effect.provide(
        CedarAuthorizer.layer.pipe(
          Layer.provide(
            Layer.succeed(
              PolicyEngine,
              PolicyEngine.of({
                bundle: { digest: "0".repeat(64) as never, source: "broken" },
                decide: () => Effect.fail(new PolicyUnavailable({ detail: "evaluator fault" })),
              }),
            ),
          ),
        ),
      ),
    ),
  )
})
