import { describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import type { OutboundRefused } from "../../src/errors/OutboundError.js"
import * as OutboundGuard from "../../src/outbound/OutboundGuard.js"
import { assert } from "../support/Assert.js"

const refusal = (result: Either.Either<void, OutboundRefused>): OutboundRefused =>
  Either.isLeft(result) ? result.left : assert.fail("expected a refusal, the guard allowed it")

const allowed = (result: Either.Either<void, OutboundRefused>): void => {
  if (Either.isLeft(result)) assert.fail(`expected the guard to allow it: ${result.left.message}`)
}

/** Each forbidden literal, how it is written in a URL, and what the refusal must say. */
const forbidden = [
  { host: "127.0.0.1", address: "127.0.0.1", tag: "Range", range: "loopback" },
  { host: "10.0.0.1", address: "10.0.0.1", tag: "Range", range: "private" },
  { host: "169.254.169.254", address: "169.254.169.254", tag: "Metadata", range: undefined },
  { host: "[::1]", address: "::1", tag: "Range", range: "loopback" },
  { host: "100.64.0.1", address: "100.64.0.1", tag: "Range", range: "carrierGradeNat" },
  { host: "192.168.1.1", address: "192.168.1.1", tag: "Range", range: "private" },
  { host: "[fe80::1]", address: "fe80::1", tag: "Range", range: "linkLocal" },
  { host: "[::ffff:127.0.0.1]", address: "127.0.0.1", tag: "Range", range: "loopback" },
  { host: "224.0.0.1", address: "224.0.0.1", tag: "Range", range: "multicast" },
] as const

describe("OutboundGuard.checkUrl", () => {
  for (const { host, address, tag, range } of forbidden) {
    it.effect(`https://${host}/ is refused with a clear error, and allowed once allow-listed`, () =>
      Effect.gen(function* () {
        const url = new URL(`https://user:pw@${host}:8443/hook?token=secret`)
        const refused = refusal((yield* OutboundGuard.make()).checkUrl(url))
        assert.strictEqual(refused.reason._tag, tag)
        if (refused.reason._tag === "Range") assert.strictEqual(refused.reason.range, range)
        assert.strictEqual(refused.address, address)
        assert.match(refused.message, tag === "Metadata" ? /cloud metadata address/ : new RegExp(`${range} address`))
        // The host only: never the credentials, the path or the query of the URL.
        assert.doesNotMatch(refused.message, /pw|token|secret|hook/)
        assert.isFalse(refused.retryable)
        allowed((yield* OutboundGuard.make({ allow: [address] })).checkUrl(url))
      }),
    )
  }

  it.effect("a CIDR on the allow-list admits the addresses inside it and no others", () =>
    Effect.gen(function* () {
      const guard = yield* OutboundGuard.make({ allow: ["10.1.0.0/16", "fd12::/16"] })
      allowed(guard.checkUrl(new URL("https://10.1.2.3/")))
      allowed(guard.checkUrl(new URL("https://[fd12::5]/")))
      refusal(guard.checkUrl(new URL("https://10.2.0.1/")))
      refusal(guard.checkUrl(new URL("https://[fd13::5]/")))
    }),
  )

  it.effect("http is refused unless allowHttp, and other schemes always", () =>
    Effect.gen(function* () {
      const url = new URL("http://example.com/hook")
      assert.strictEqual(refusal((yield* OutboundGuard.make()).checkUrl(url)).reason._tag, "Http")
      allowed((yield* OutboundGuard.make({ allowHttp: true })).checkUrl(url))
      allowed((yield* OutboundGuard.make()).checkUrl(new URL("https://example.com/hook")))
      const ftp = refusal((yield* OutboundGuard.make({ allowHttp: true })).checkUrl(new URL("ftp://example.com/")))
      assert.deepStrictEqual(ftp.reason, { _tag: "Scheme", scheme: "ftp:" })
    }),
  )
})

describe("OutboundGuard.checkAddress", () => {
  it.effect("metadata addresses need their own entry: a CIDR or a host name covering them is not enough", () =>
    Effect.gen(function* () {
      const broad = yield* OutboundGuard.make({
        allow: ["169.254.0.0/16", "100.64.0.0/10", "fd00::/8", "meta.internal"],
      })
      for (const address of OutboundGuard.metadataAddresses) {
        assert.strictEqual(refusal(broad.checkAddress("meta.internal", address)).reason._tag, "Metadata")
        allowed((yield* OutboundGuard.make({ allow: [address] })).checkAddress("meta.internal", address))
      }
      allowed(broad.checkAddress("x", "169.254.1.1"))
      allowed(broad.checkAddress("x", "100.100.100.201"))
    }),
  )

  it.effect("public addresses pass; reserved, broadcast, unspecified, IPv4-compatible and unique-local do not", () =>
    Effect.gen(function* () {
      const guard = yield* OutboundGuard.make()
      for (const address of ["8.8.8.8", "93.184.215.14", "2606:4700::1111", "2a00:1450:4001::200e"]) {
        allowed(guard.checkAddress("x", address))
      }
      const ranges = {
        "0.0.0.0": "unspecified",
        "255.255.255.255": "broadcast",
        "192.0.2.1": "reserved",
        "240.0.0.1": "reserved",
        "::": "unspecified",
        // ipaddr.js reads the dotted form as the IPv4 address it embeds; the hex form stays IPv6.
        "::127.0.0.1": "loopback",
        "::7f00:1": "ipv4Compatible",
        "fc00::1": "uniqueLocal",
        "fd12:3456::1": "uniqueLocal",
        "ff02::1": "multicast",
        "64:ff9b::7f00:1": "rfc6052",
        "2002:7f00:1::": "6to4",
      } as const
      for (const [address, range] of Object.entries(ranges)) {
        assert.deepStrictEqual(refusal(guard.checkAddress("x", address)).reason, { _tag: "Range", range }, address)
      }
      assert.strictEqual(refusal(guard.checkAddress("x", "not-an-ip")).reason._tag, "Unparsable")
    }),
  )

  it.effect("a host name on the allow-list admits whatever that name resolves to, and only for that name", () =>
    Effect.gen(function* () {
      const guard = yield* OutboundGuard.make({ allow: ["Hooks.Internal."] })
      allowed(guard.checkAddress("hooks.internal", "10.0.0.7"))
      allowed(guard.checkAddress("HOOKS.internal.", "127.0.0.1"))
      refusal(guard.checkAddress("other.internal", "10.0.0.7"))
    }),
  )

  it.effect("an allow-list entry that is no CIDR, address or host name fails the guard's construction", () =>
    Effect.gen(function* () {
      for (const entry of ["10.0.0.0/33", "10.0.0/8", "10/8", "10.0.0.0/", "not a host", "exa mple.com", ""]) {
        const result = yield* Effect.either(OutboundGuard.make({ allow: [entry] }))
        assert.isTrue(Either.isLeft(result) && result.left._tag === "OutboundAllowListInvalid", entry)
      }
    }),
  )
})

describe("OutboundGuard.lookup", () => {
  const lookup = (guard: OutboundGuard.OutboundGuard, host: string, all: boolean) =>
    Effect.async<unknown, unknown>((resume) => {
      guard.lookup(host, { all }, (error, address, family) =>
        resume(error === null ? Effect.succeed(all ? address : { address, family }) : Effect.fail(error)),
      )
    })

  it.effect("a name resolving to loopback (localhost, through the real resolver) is refused", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(lookup(yield* OutboundGuard.make(), "localhost", true))
      const refused = error as OutboundRefused
      assert.strictEqual(refused._tag, "OutboundRefused")
      assert.strictEqual(refused.host, "localhost")
      assert.match(
        refused.message,
        /^outbound connection to localhost \((127\.0\.0\.1|::1)\) refused: .* loopback address/,
      )
    }),
  )

  it.effect("one forbidden address among public ones refuses the name", () =>
    Effect.gen(function* () {
      const guard = yield* OutboundGuard.make({
        resolve: async () => [
          { address: "93.184.215.14", family: 4 },
          { address: "10.0.0.1", family: 4 },
        ],
      })
      const error = yield* Effect.flip(lookup(guard, "mixed.example", true))
      assert.strictEqual((error as OutboundRefused).address, "10.0.0.1")
    }),
  )

  it.effect("each lookup resolves afresh: a name that rebinds to loopback is refused on the next connection", () =>
    Effect.gen(function* () {
      let calls = 0
      const guard = yield* OutboundGuard.make({
        resolve: async () =>
          calls++ === 0 ? [{ address: "93.184.215.14", family: 4 }] : [{ address: "127.0.0.1", family: 4 }],
      })
      assert.deepStrictEqual(yield* lookup(guard, "rebind.example", false), { address: "93.184.215.14", family: 4 })
      const error = yield* Effect.flip(lookup(guard, "rebind.example", false))
      assert.strictEqual((error as OutboundRefused).address, "127.0.0.1")
      assert.strictEqual(calls, 2)
    }),
  )

  it.effect("answers every checked address when asked for all (Node's happy eyeballs asks so)", () =>
    Effect.gen(function* () {
      const answers = [
        { address: "2606:4700::1111", family: 6 },
        { address: "93.184.215.14", family: 4 },
      ]
      const guard = yield* OutboundGuard.make({ resolve: async () => answers })
      assert.deepStrictEqual(yield* lookup(guard, "dual.example", true), answers)
    }),
  )
})

// The test's own table of IANA's special-purpose IPv4 blocks, written independently of ipaddr.js.
const special: ReadonlyArray<readonly [number, number]> = [
  [0x00000000, 8],
  [0x0a000000, 8],
  [0x64400000, 10],
  [0x7f000000, 8],
  [0xa9fe0000, 16],
  [0xac100000, 12],
  [0xc0000000, 24],
  [0xc0000200, 24],
  [0xc01fc400, 24],
  [0xc034c100, 24],
  [0xc0586300, 24],
  [0xc0a80000, 16],
  [0xc0afb000, 24],
  [0xc6120000, 15],
  [0xc6336400, 24],
  [0xcb007100, 24],
  [0xe0000000, 4],
  [0xf0000000, 4],
]
const inBlock = (n: number, [base, bits]: readonly [number, number]): boolean =>
  bits === 0 || n >>> (32 - bits) === base >>> (32 - bits)
const dotted = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join(".")
const within = ([base, bits]: readonly [number, number]) =>
  fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((offset) => (base + offset) >>> 0)

describe("OutboundGuard ranges (property)", () => {
  const guard = Effect.runSync(OutboundGuard.make())

  it("every address in 10/8, 127/8, 169.254/16, 100.64/10, 192.168/16 and 172.16/12 is refused", () => {
    const blocks = [
      [0x0a000000, 8],
      [0x7f000000, 8],
      [0xa9fe0000, 16],
      [0x64400000, 10],
      [0xc0a80000, 16],
      [0xac100000, 12],
    ] as const
    fc.assert(
      fc.property(fc.oneof(...blocks.map(within)), (n) => {
        assert.isTrue(Either.isLeft(guard.checkAddress("x", dotted(n))), dotted(n))
        // The same address mapped into IPv6 is refused too.
        assert.isTrue(Either.isLeft(guard.checkAddress("x", `::ffff:${dotted(n)}`)), `::ffff:${dotted(n)}`)
      }),
      { numRuns: 2000 },
    )
  })

  it("an address outside every special-purpose block is allowed, and one inside is refused", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (n) => {
        const forbidden = special.some((block) => inBlock(n, block)) || n === 0xffffffff
        assert.strictEqual(Either.isLeft(guard.checkAddress("x", dotted(n))), forbidden, dotted(n))
      }),
      { numRuns: 5000 },
    )
  })
})
