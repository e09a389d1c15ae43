/**
 * The credential table (§8.1): which caller a bearer token stands for. Tokens are never held in
 * clear, only their SHA-256 digests, so the table can sit in a config repository or an
 * environment variable without handing out the credentials themselves.
 *
 * The table is JSON, an array of entries, each exactly these four fields (any other field, a
 * clear `token` above all, refuses the table):
 *
 *   [{ "digest": "<64 lowercase hex: SHA-256 of the token's UTF-8>",
 *      "tenant": "acme", "actor": "alice", "roles": ["reviewer"] }]
 *
 * A table that cannot be read, is empty, has an invalid entry (tenant per `Tenant.parse`, empty
 * actor or role, a control character in either, no roles, an actor in the reserved `system:`
 * namespace) or lists one digest twice is refused with `CredentialsInvalid` naming the entry,
 * and the server does not start.
 */
import { createHash } from "node:crypto"
import { FileSystem } from "@effect/platform"
import { Context, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import * as Digest from "../domain/Digest.js"
import * as JsonText from "../domain/JsonText.js"
import * as Tenant from "../domain/Tenant.js"
import { Caller } from "./Caller.js"
import * as Issues from "./internal/Issues.js"

/** The table could not be read or an entry is invalid; `source` names the file or variable. */
export class CredentialsInvalid extends Schema.TaggedError<CredentialsInvalid>()("CredentialsInvalid", {
  source: Schema.String,
  detail: Schema.String,
}) {
  override get message(): string {
    return `credential table ${this.source}: ${this.detail}`
  }
}

/**
 * A name as a credential writes it: trimmed, not empty, no control characters. The actor is
 * written into tasks, decisions and logs, where a newline would forge a second line.
 */
const Name = Schema.NonEmptyTrimmedString.pipe(
  Schema.filter((name) => !hasControl(name), { message: () => "must not contain control characters" }),
)

/** One entry as written in the table. */
export const Entry = Schema.Struct({
  digest: Digest.Digest,
  tenant: Schema.String,
  actor: Name,
  // A caller with no role is refused every action (deny by default): a forgotten role, not a design.
  roles: Schema.Array(Name).pipe(
    Schema.minItems(1, { message: () => "must list at least one role (a caller with none may do nothing)" }),
  ),
})
export type Entry = typeof Entry.Encoded

/** The actors the plane itself decides as (`system:expiry`, `system:unattended`); no credential may act as one. */
export const RESERVED_ACTOR_PREFIX = "system:"

export class Credentials extends Context.Tag("agentplane/http/Credentials")<
  Credentials,
  {
    /** The caller the token stands for; none for an empty or unknown token. Never fails. */
    readonly lookup: (token: Redacted.Redacted<string>) => Effect.Effect<Option.Option<Caller>>
    /** Every tenant some credential acts for, each once, in table order (the tenants a sweeper visits). */
    readonly tenants: ReadonlyArray<Tenant.TenantId>
    /** Every role some credential holds, each once, in table order (the roles a policy may name). */
    readonly roles: ReadonlyArray<string>
  }
>() {}

/** The digest the table stores for `token`: SHA-256 of its UTF-8 bytes, 64 lowercase hex. */
export const digest = (token: string | Redacted.Redacted<string>): Digest.Digest =>
  Digest.Digest.make(
    createHash("sha256")
      .update(Redacted.isRedacted(token) ? Redacted.value(token) : token, "utf8")
      .digest("hex"),
  )

/**
 * The table of `entries`, validated. Lookup is keyed by digest rather than comparing the
 * presented token with each entry: the map's timing can at most reveal something about a digest,
 * and a digest is useless without a preimage, while per-entry constant-time comparison would
 * cost a pass over the table on every request.
 */
export const make = (
  entries: ReadonlyArray<unknown>,
  source: string,
): Effect.Effect<Credentials["Type"], CredentialsInvalid> =>
  Effect.gen(function* () {
    const refuse = (detail: string) => new CredentialsInvalid({ source, detail })
    if (entries.length === 0) return yield* refuse("has no entries; the server would admit nobody")
    const byDigest = new Map<string, { readonly index: number; readonly caller: Caller }>()
    const tenants: Array<Tenant.TenantId> = []
    const roles = new Set<string>()
    for (const [index, raw] of entries.entries()) {
      const entry = yield* Either.mapLeft(decodeEntry(raw), (e) =>
        refuse(`${describe(index, raw)}: ${Issues.format(e)}`),
      )
      const tenant = yield* Either.mapLeft(Tenant.parse(entry.tenant), (e) =>
        refuse(`${describe(index, raw)}: ${e.message}`),
      )
      if (entry.actor.startsWith(RESERVED_ACTOR_PREFIX)) {
        return yield* refuse(
          `${describe(index, raw)}: actors named ${RESERVED_ACTOR_PREFIX}… are reserved for the plane`,
        )
      }
      const previous = byDigest.get(entry.digest)
      if (previous !== undefined) {
        // Two callers behind one token would make the caller depend on table order.
        return yield* refuse(`${describe(index, raw)} repeats the digest of entry ${previous.index}`)
      }
      const caller = new Caller({ tenant, actor: entry.actor, roles: [...new Set(entry.roles)] })
      byDigest.set(entry.digest, { index, caller })
      if (!tenants.includes(tenant)) tenants.push(tenant)
      for (const role of caller.roles) roles.add(role)
    }
    return Credentials.of({
      lookup: (token) =>
        Effect.sync(() =>
          Redacted.value(token).length === 0
            ? Option.none()
            : Option.map(Option.fromNullable(byDigest.get(digest(token))), (found) => found.caller),
        ),
      tenants,
      roles: [...roles],
    })
  })

/** The table of `entries` (as they are written in the file). */
export const layerEntries = (
  entries: ReadonlyArray<Entry>,
  source = "(in code)",
): Layer.Layer<Credentials, CredentialsInvalid> => Layer.effect(Credentials, make(entries, source))

/** The table written as JSON text, e.g. the value of `AGENTPLANE_TOKENS_JSON`; `source` names where it came from. */
export const fromJson = (json: string, source: string): Effect.Effect<Credentials["Type"], CredentialsInvalid> =>
  Effect.flatMap(parseTable(json, source), (entries) => make(entries, source))

/** The table in the JSON file at `path`. */
export const fromFile = (path: string): Effect.Effect<Credentials["Type"], CredentialsInvalid, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs
      .readFileString(path)
      .pipe(Effect.mapError((e) => new CredentialsInvalid({ source: path, detail: `cannot be read: ${e.message}` })))
    return yield* fromJson(text, path)
  })

/** `fromJson` as a layer. */
export const layerJson = (json: string, source: string): Layer.Layer<Credentials, CredentialsInvalid> =>
  Layer.effect(Credentials, fromJson(json, source))

/** The table in the JSON file at `path`, read once at start. */
export const layerFile = (path: string): Layer.Layer<Credentials, CredentialsInvalid, FileSystem.FileSystem> =>
  Layer.effect(Credentials, fromFile(path))

// internal

const decodeEntry = Schema.decodeUnknownEither(Entry, { onExcessProperty: "error", errors: "all" })

/**
 * The table's JSON, read strictly (`JsonText.parse`): with `JSON.parse` an entry's second
 * `tenant` key silently replaced the first, so the caller acted for a tenant the reviewer of the
 * file never saw.
 */
const parseTable = (json: string, source: string): Effect.Effect<ReadonlyArray<unknown>, CredentialsInvalid> =>
  Either.mapLeft(
    JsonText.parse(json),
    (problem) => new CredentialsInvalid({ source, detail: `is not valid JSON: ${problem}` }),
  ).pipe(
    Effect.flatMap((value) =>
      Array.isArray(value)
        ? Effect.succeed<ReadonlyArray<unknown>>(value)
        : Effect.fail(
            new CredentialsInvalid({ source, detail: "must be a JSON array of {digest, tenant, actor, roles}" }),
          ),
    ),
  )

const hasControl = (text: string): boolean => {
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}

/** "entry 2 (actor "bob")": the index, and the actor when the entry names one, never a digest or token. */
const describe = (index: number, raw: unknown): string => {
  const actor = typeof raw === "object" && raw !== null ? (raw as { actor?: unknown }).actor : undefined
  return typeof actor === "string" ? `entry ${index} (actor ${JSON.stringify(actor)})` : `entry ${index}`
}
