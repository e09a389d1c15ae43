/**
 * The caller of an HTTP request: what an authenticated credential stands for (§8.1). Handlers read
 * the tenant, actor and roles from here, never from a body, query or path.
 */
import { Context, Schema } from "effect"
import { TenantId } from "../domain/Tenant.js"

export class Caller extends Schema.Class<Caller>("Caller")({
  tenant: TenantId,
  actor: Schema.NonEmptyTrimmedString,
  roles: Schema.Array(Schema.NonEmptyTrimmedString),
}) {}

/** The caller of the request being served; provided by the `Authentication` middleware. */
export class CurrentCaller extends Context.Tag("agentplane/http/CurrentCaller")<CurrentCaller, Caller>() {}
