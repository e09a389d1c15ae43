/**
 * agentplane's Cedar schema (§7.12), shipped in the package as this constant (so it reaches
 * `dist` with the code that reads it) and printed by `agentplane policy schema`.
 *
 * Entities:
 * - `Agentplane::Agent` is every principal: a run acts as its capability (the entity id) with
 *   `governedBy`, `tenant` and `admittedBy` attributes; an HTTP caller is its credential's actor,
 *   a member of one `Agentplane::Role` per role it holds.
 * - `Agentplane::Case` / `Agentplane::Run` are the resource of an effect (the run's case, else the
 *   run), with its `tenant`; `Agentplane::Api::"api"` is the resource of a route that names none.
 *
 * Actions: the routes' `Agentplane::Action::"api:…"` (members of `Action::"api"`), the release of
 * a value `Agentplane::Action::"agentplane.release"`, and the group `Agentplane::Action::"effect"`.
 * Effect kinds belong to a deployment, not to agentplane, so a bundle declares its own in a
 * `*.cedarschema` file as actions of the empty namespace, each `in [Agentplane::Action::"effect"]`
 * with `Agentplane::EffectContext` (or a record that adds a typed `args`); see `policy/Bundle.ts`.
 *
 * Context of an effect: `mutates`, `phase` (`forward` | `compensating`), `label` (`trusted` |
 * `untrusted`, the step's outbound label), `provenances` (where untrusted inputs came from) and
 * `argsJson` (the canonical arguments as JSON text); an action that declares `args` also gets the
 * arguments as a Cedar record (see `PolicyEngineCedar.ts` for how JSON becomes Cedar).
 */

/** Version of this schema; a change that could alter a decision changes the text, and so every bundle digest. */
export const VERSION = 1

export const text = `// agentplane policy schema, version ${VERSION}
namespace Agentplane {
  entity Role;
  entity Agent in [Role] = {
    "governedBy": String,
    "tenant": String,
    "admittedBy": String,
  };
  entity Case = { "tenant": String };
  entity Run = { "tenant": String };
  entity Api;

  type EffectContext = {
    "mutates": Bool,
    "phase": String,
    "label": String,
    "provenances": Set<String>,
    "argsJson": String,
  };

  action effect;
  action api;

  action "agentplane.release" appliesTo {
    principal: Agent,
    resource: [Case, Run],
    context: EffectContext,
  };

  action
    "api:task.list", "api:task.read", "api:task.claim", "api:task.release", "api:task.takeover",
    "api:task.decide", "api:case.list", "api:case.read", "api:obligation.list", "api:event.deliver",
    "api:deadletter.list", "api:census.read", "api:admin.halt", "api:run.list", "api:run.read",
    "api:run.cancel", "api:run.start", "api:run.journal", "api:log.read", "api:policy.read"
    in [api]
    appliesTo {
      principal: Agent,
      resource: [Api, Case, Run],
      context: {},
    };
}
`

/** The route actions `text` declares, in its order; a test holds them to the routes' `Authorizer.Action`. */
export const API_ACTIONS: ReadonlyArray<string> = Array.from(text.matchAll(/"(api:[a-z.]+)"/g), (m) => m[1] ?? "")
