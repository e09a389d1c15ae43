/**
 * A policy bundle (§7.12): the Cedar policies an operator wrote, and the schema they are checked
 * against, which is agentplane's (`AgentplaneSchema.text`) followed by the deployment's own
 * declarations (its effect kinds).
 *
 * On disk a bundle is a directory: every `*.cedar` file in it holds policies, every
 * `*.cedarschema` file declarations added to the schema; both are taken in file-name order
 * (code-unit order), and other files and subdirectories are ignored. A single `*.cedar` file is a
 * bundle of its policies with agentplane's schema alone (no effect kinds, so it can only speak of
 * the routes and of `agentplane.release`).
 *
 * Identity (`digest`): SHA-256 of the UTF-8 RFC 8785 (JCS) text of
 *
 *   {"bundle": 1, "policies": [[<file name>, <file text>], …], "schema": <schema text>}
 *
 * with the policy files in file-name order and `schema` the full text (agentplane's schema, then
 * each declaration file, each followed by one newline). File names are in it because a policy
 * without an `@id` is known by its file; texts are taken byte for byte (no trimming, no
 * newline conversion), so any change an operator could make to what is evaluated changes the
 * digest, and JCS's quoting keeps one file's end from passing for the next one's start.
 */
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as Canonical from "../domain/Canonical.js"
import * as Digest from "../domain/Digest.js"
import { BundleInvalid, BundleUnreadable } from "../errors/PolicyError.js"
import * as AgentplaneSchema from "./AgentplaneSchema.js"

/** One file of policies, by its name within the bundle. */
export interface PolicyFile {
  readonly name: string
  readonly text: string
}

export interface Bundle {
  /** Where it was read from, for messages. */
  readonly source: string
  readonly policies: ReadonlyArray<PolicyFile>
  /** The schema the policies are validated against: agentplane's, then the bundle's declarations. */
  readonly schema: string
  readonly digest: Digest.Digest
}

/** Version of the digest rule above. */
export const DIGEST_RULE = 1

/** The bundle of `policies` with agentplane's schema followed by `declarations`, ordered and digested by the rule above. */
export const make = (
  source: string,
  policies: ReadonlyArray<PolicyFile>,
  declarations: ReadonlyArray<string> = [],
): Bundle => {
  const ordered = [...policies].sort((a, b) => byCodeUnits(a.name, b.name))
  const schema = [AgentplaneSchema.text, ...declarations.map((d) => `${d}\n`)].join("")
  return { source, policies: ordered, schema, digest: digestOf(ordered, schema) }
}

/** The digest of ordered policy files and a schema text, by the rule above. */
export const digestOf = (policies: ReadonlyArray<PolicyFile>, schema: string): Digest.Digest =>
  Digest.of(Canonical.bytes({ bundle: DIGEST_RULE, policies: policies.map((p) => [p.name, p.text]), schema }))

/**
 * The bundle at `path`: a directory as above, or one `*.cedar` file; `BundleUnreadable` when its
 * files cannot be read, `BundleInvalid` when it is not a bundle (no policy file, another kind of file).
 */
export const read = (path: string): Effect.Effect<Bundle, BundleInvalid | BundleUnreadable, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const refuse = (problem: string) => new BundleInvalid({ source: path, problems: [problem] })
    const unreadable = (e: { readonly message: string }) => new BundleUnreadable({ source: path, detail: e.message })
    const info = yield* fs.stat(path).pipe(Effect.mapError(unreadable))
    if (info.type === "File") {
      if (!path.endsWith(".cedar")) return yield* refuse("is a file but not a *.cedar policy file")
      const text = yield* fs.readFileString(path).pipe(Effect.mapError(unreadable))
      return make(path, [{ name: baseName(path), text }])
    }
    if (info.type !== "Directory") return yield* refuse("is neither a directory nor a *.cedar file")
    const names = [...(yield* fs.readDirectory(path).pipe(Effect.mapError(unreadable)))].sort(byCodeUnits)
    const readAll = (suffix: string) =>
      Effect.forEach(
        names.filter((n) => n.endsWith(suffix)),
        (name) =>
          fs.readFileString(`${path}/${name}`).pipe(
            Effect.map((text) => ({ name, text })),
            Effect.mapError(unreadable),
          ),
      )
    const policies = yield* readAll(".cedar")
    // An empty bundle denies everything: that is a mistake (a wrong directory), not a policy.
    if (policies.length === 0) return yield* refuse("holds no *.cedar policy file")
    const declarations = yield* readAll(".cedarschema")
    return make(
      path,
      policies,
      declarations.map((d) => d.text),
    )
  })

// internal

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1)
