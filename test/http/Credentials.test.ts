/**
 * The credential table: digests in, callers out, and every malformed table refused with a message
 * that names the entry and never repeats a secret.
 */
import { randomUUID } from "node:crypto"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option, Redacted } from "effect"
import { TenantId } from "../../src/domain/Tenant.js"
import { Caller } from "../../src/http/Caller.js"
import * as Credentials from "../../src/http/Credentials.js"
import { assert } from "../support/Assert.js"

const ALICE = "alice-token-3f9c"
const BOB = "bob-token-81d2"

const alice = { digest: Credentials.digest(ALICE), tenant: "acme", actor: "alice", roles: ["reviewer"] }
const bob = { digest: Credentials.digest(BOB), tenant: " globex ", actor: "bob", roles: ["agent", "agent"] }

const table = (entries: ReadonlyArray<unknown>) => Credentials.make(entries, "tokens.json")

/** The refusal `entries` earn; the test fails if they are accepted. */
const refusal = (entries: ReadonlyArray<unknown>) =>
  Effect.map(Effect.flip(table(entries)), (e) => {
    assert.strictEqual(e._tag, "CredentialsInvalid")
    assert.strictEqual(e.source, "tokens.json")
    return e.message
  })

const token = (value: string) => Redacted.make(value)

describe("Credentials.digest", () => {
  it("is SHA-256 of the UTF-8 bytes in lowercase hex", () => {
    assert.strictEqual(
      Credentials.digest(""),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "the empty string's SHA-256",
    )
    assert.strictEqual(
      Credentials.digest("abc"),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      "the FIPS 180-2 test vector",
    )
    assert.strictEqual(Credentials.digest(token("abc")), Credentials.digest("abc"))
    assert.notStrictEqual(Credentials.digest("é"), Credentials.digest("e\u0301"))
  })
})

describe("Credentials.lookup", () => {
  it.effect("a listed token is its entry's caller, tenant trimmed and roles once each", () =>
    Effect.gen(function* () {
      const credentials = yield* table([alice, bob])
      assert.deepStrictEqual(
        yield* credentials.lookup(token(ALICE)),
        Option.some(new Caller({ tenant: TenantId.make("acme"), actor: "alice", roles: ["reviewer"] })),
      )
      assert.deepStrictEqual(
        yield* credentials.lookup(token(BOB)),
        Option.some(new Caller({ tenant: TenantId.make("globex"), actor: "bob", roles: ["agent"] })),
      )
    }),
  )

  it.effect("an unknown, empty or near-miss token is none", () =>
    Effect.gen(function* () {
      const credentials = yield* table([alice])
      for (const value of ["", "nobody", `${ALICE} `, ALICE.toUpperCase(), ALICE.slice(0, -1)]) {
        assert.deepStrictEqual(yield* credentials.lookup(token(value)), Option.none(), JSON.stringify(value))
      }
    }),
  )

  it.effect("the stored digest is not itself a credential", () =>
    Effect.gen(function* () {
      const credentials = yield* table([alice])
      assert.deepStrictEqual(yield* credentials.lookup(token(alice.digest)), Option.none())
    }),
  )

  it.effect("roles lists each role some credential holds once, in table order", () =>
    Effect.gen(function* () {
      const carol = { ...alice, digest: Credentials.digest("carol"), actor: "carol", roles: ["admin", "reviewer"] }
      const credentials = yield* table([alice, bob, carol])
      assert.deepStrictEqual(credentials.roles, ["reviewer", "agent", "admin"])
    }),
  )

  it.effect("tenants lists each tenant once, in table order", () =>
    Effect.gen(function* () {
      const carol = { ...alice, digest: Credentials.digest("carol"), actor: "carol" }
      const credentials = yield* table([alice, bob, carol])
      assert.deepStrictEqual(credentials.tenants, [TenantId.make("acme"), TenantId.make("globex")])
    }),
  )
})

describe("Credentials.make refuses", () => {
  it.effect("an empty table", () => Effect.map(refusal([]), (message) => assert.match(message, /has no entries/)))

  it.effect("a tenant Tenant.parse refuses, naming the entry", () =>
    Effect.gen(function* () {
      assert.match(yield* refusal([alice, { ...bob, tenant: "a/b" }]), /entry 1 \(actor "bob"\).*must not contain "\/"/)
      assert.match(yield* refusal([{ ...alice, tenant: "   " }]), /entry 0 \(actor "alice"\).*must not be empty/)
      assert.match(yield* refusal([{ ...alice, tenant: "x".repeat(65) }]), /entry 0 .*at most 64/)
    }),
  )

  it.effect("an entry holding a clear token, without repeating it", () =>
    Effect.gen(function* () {
      const inField = yield* refusal([{ ...alice, token: ALICE }])
      assert.match(inField, /entry 0 \(actor "alice"\): token: is unexpected/)
      assert.isFalse(inField.includes(ALICE), inField)
      const asDigest = yield* refusal([{ ...alice, digest: ALICE }])
      assert.match(asDigest, /digest: expected 64 lowercase hex digits/)
      assert.isFalse(asDigest.includes(ALICE), asDigest)
    }),
  )

  it.effect("an upper-case or short digest", () =>
    Effect.gen(function* () {
      assert.match(yield* refusal([{ ...alice, digest: alice.digest.toUpperCase() }]), /digest: expected 64/)
      assert.match(yield* refusal([{ ...alice, digest: alice.digest.slice(1) }]), /digest: expected 64/)
    }),
  )

  it.effect("an empty actor or role, or a missing field", () =>
    Effect.gen(function* () {
      assert.match(yield* refusal([{ ...alice, actor: "" }]), /entry 0 .*actor:/)
      assert.match(yield* refusal([{ ...alice, roles: ["reviewer", " "] }]), /roles\.1:/)
      const { roles: _, ...noRoles } = alice
      assert.match(yield* refusal([noRoles]), /roles: is missing/)
      assert.match(yield* refusal(["alice"]), /entry 0: /)
    }),
  )

  it.effect("an actor in the plane's reserved system: namespace", () =>
    Effect.map(refusal([{ ...alice, actor: "system:expiry" }]), (message) =>
      assert.match(message, /entry 0 \(actor "system:expiry"\): actors named system:… are reserved/),
    ),
  )

  it.effect("an actor or role holding a control character, a newline above all", () =>
    Effect.gen(function* () {
      assert.match(
        yield* refusal([{ ...alice, actor: "alice\nadmin" }]),
        /^credential table tokens\.json: entry 0 \(actor "alice\\nadmin"\): actor: must not contain control characters$/,
      )
      for (const char of ["\r", "\t", "\u0000", "\u001b", "\u007f", "\u0085"]) {
        assert.match(yield* refusal([{ ...alice, actor: `al${char}ice` }]), /actor: must not contain control/, char)
      }
      assert.match(yield* refusal([{ ...alice, roles: ["reviewer", "admin\n"] }]), /roles\.1: /)
      assert.match(yield* refusal([{ ...alice, roles: ["rev\u0000iewer"] }]), /roles\.0: must not contain control/)
    }),
  )

  it.effect("an entry with no roles, which could do nothing", () =>
    Effect.map(refusal([alice, { ...bob, roles: [] }]), (message) =>
      assert.match(message, /entry 1 \(actor "bob"\): roles: must list at least one role/),
    ),
  )

  it.effect("two entries with one digest", () =>
    Effect.map(refusal([alice, bob, { ...bob, digest: alice.digest, actor: "mallory" }]), (message) =>
      assert.match(message, /entry 2 \(actor "mallory"\) repeats the digest of entry 0/),
    ),
  )
})

describe("Credentials layers", () => {
  const withFile = (text: string) => {
    const path = join(tmpdir(), `agentplane-tokens-${randomUUID()}.json`)
    writeFileSync(path, text)
    return { path, [Symbol.dispose]: () => rmSync(path, { force: true }) }
  }
  const lookupVia = (layer: Layer.Layer<Credentials.Credentials, Credentials.CredentialsInvalid>, value: string) =>
    Effect.flatMap(Credentials.Credentials, (c) => c.lookup(token(value))).pipe(Effect.provide(layer), Effect.either)

  it.effect("layerFile reads a JSON array of entries", () =>
    Effect.gen(function* () {
      using file = withFile(JSON.stringify([alice]))
      const found = yield* lookupVia(Credentials.layerFile(file.path).pipe(Layer.provide(NodeFileSystem.layer)), ALICE)
      assert.deepStrictEqual(
        Either.map(
          found,
          Option.map((c) => c.actor),
        ),
        Either.right(Option.some("alice")),
      )
    }),
  )

  it.effect("layerFile refuses a missing file, invalid JSON and a non-array, naming the file", () =>
    Effect.gen(function* () {
      const viaFile = (path: string) =>
        lookupVia(Credentials.layerFile(path).pipe(Layer.provide(NodeFileSystem.layer)), ALICE)
      const missing = join(tmpdir(), `agentplane-absent-${randomUUID()}.json`)
      const absent = yield* viaFile(missing)
      assert.isTrue(
        Either.isLeft(absent) && absent.left.message.startsWith(`credential table ${missing}: cannot be read`),
      )
      using broken = withFile("[{")
      const invalid = yield* viaFile(broken.path)
      assert.isTrue(Either.isLeft(invalid) && /: is not valid JSON: the text ends inside/.test(invalid.left.message))
      using object = withFile(JSON.stringify({ tokens: [alice] }))
      const notArray = yield* viaFile(object.path)
      assert.isTrue(Either.isLeft(notArray) && /must be a JSON array/.test(notArray.left.message))
    }),
  )

  it.effect("a key given twice anywhere refuses the table, naming where (JSON.parse kept the last)", () =>
    Effect.gen(function* () {
      const entry = `{"digest": "${alice.digest}", "tenant": "acme", "actor": "alice", "roles": ["reviewer"]`
      const viaJson = (json: string) =>
        Effect.flip(Credentials.fromJson(json, "AGENTPLANE_TOKENS_JSON")).pipe(Effect.map((e) => e.message))
      assert.match(
        yield* viaJson(`[${entry}, "tenant": "globex"}]`),
        /^credential table AGENTPLANE_TOKENS_JSON: is not valid JSON: duplicate member name at \$\[0\]\.tenant /,
      )
      assert.match(
        yield* viaJson(`[${entry}}, ${entry}, "actor": "root"}]`),
        /duplicate member name at \$\[1\]\.actor /,
      )
      using file = withFile(`[${entry}, "roles": ["admin"]}]`)
      const viaFile = yield* lookupVia(
        Credentials.layerFile(file.path).pipe(Layer.provide(NodeFileSystem.layer)),
        ALICE,
      )
      assert.isTrue(
        Either.isLeft(viaFile) && /duplicate member name at \$\[0\]\.roles /.test(viaFile.left.message),
        String(viaFile),
      )
    }),
  )

  it.effect("layerJson and layerEntries build the same table", () =>
    Effect.gen(function* () {
      const viaJson = yield* lookupVia(Credentials.layerJson(JSON.stringify([bob]), "AGENTPLANE_TOKENS_JSON"), BOB)
      const viaEntries = yield* lookupVia(Credentials.layerEntries([bob]), BOB)
      assert.deepStrictEqual(viaJson, viaEntries)
      assert.deepStrictEqual(
        Either.map(
          viaJson,
          Option.map((c) => c.tenant),
        ),
        Either.right(Option.some(TenantId.make("globex"))),
      )
      const refused = yield* lookupVia(Credentials.layerJson("nope", "AGENTPLANE_TOKENS_JSON"), BOB)
      assert.isTrue(Either.isLeft(refused) && refused.left.source === "AGENTPLANE_TOKENS_JSON")
    }),
  )
})
