/**
 * The outbound guard (§8.4): every outbound connection (webhooks, MCP over HTTP) must
 * reach a public address unless configuration allow-lists it.
 *
 * The check runs on the resolved address of each connection, not on the URL's name: the guard
 * hands Node's agents a `lookup` that resolves, refuses if any answer is forbidden, and gives the
 * socket only checked addresses. Checking a name once and connecting later would let DNS
 * rebinding answer a public address to the check and 127.0.0.1 to the connection. Node does not
 * call `lookup` for a literal IP host, so `checkUrl` checks those before a request is made.
 *
 * Ranges come from ipaddr.js (`range()`): anything it does not call `unicast` is refused, so a
 * range the library learns later is refused without a change here.
 */
import * as Dns from "node:dns"
import type * as Net from "node:net"
import { isIP } from "node:net"
import { Effect, Either } from "effect"
import ipaddr from "ipaddr.js"
import { OutboundAllowListInvalid, OutboundRefused } from "../errors/OutboundError.js"

/** One resolved address, as `dns.lookup(host, { all: true })` answers it. */
export interface Resolved {
  readonly address: string
  readonly family: number
}

/** Resolves a host name to every address it has; `family` 0 means either. */
export type Resolve = (host: string, family: 0 | 4 | 6) => Promise<ReadonlyArray<Resolved>>

export interface Options {
  /**
   * Entries that may be reached although forbidden: CIDRs ("10.1.0.0/16", "fd12::/16"), addresses
   * ("127.0.0.1", "::1") and host names ("hooks.internal", whose every address is then allowed).
   * A cloud metadata address is allowed only by an entry that is that address itself.
   */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Allows `http:` URLs; without it only `https:` is. */
  readonly allowHttp?: boolean | undefined
  /** The resolver; `dns.lookup` with `all: true` unless given (tests inject one to answer differently per call). */
  readonly resolve?: Resolve | undefined
}

export interface OutboundGuard {
  /**
   * Refuses a URL whose scheme is not allowed, or whose host is a literal forbidden address (Node
   * connects to those without a lookup). A host name passes; its addresses are checked by `lookup`.
   */
  readonly checkUrl: (url: URL) => Either.Either<void, OutboundRefused>
  /** Refuses `address` (what `host` resolved to, or a literal) unless it is public or allow-listed. */
  readonly checkAddress: (host: string, address: string) => Either.Either<void, OutboundRefused>
  /**
   * Node's `lookup` for `http.Agent` / `https.Agent` options: resolves every address, fails with
   * `OutboundRefused` if any is forbidden, and answers only checked addresses. Refusing when any
   * answer is forbidden, rather than picking a public one, keeps a name that mixes loopback into
   * its answers from working some of the time.
   */
  readonly lookup: Net.LookupFunction
}

/** The addresses clouds serve instance credentials from: AWS/GCP/Azure, AWS over IPv6, Alibaba. */
export const metadataAddresses: ReadonlyArray<string> = ["169.254.169.254", "fd00:ec2::254", "100.100.100.200"]

/** A guard for `options`; fails if an allow-list entry is neither a CIDR, an address nor a host name. */
export const make = (options: Options = {}): Effect.Effect<OutboundGuard, OutboundAllowListInvalid> =>
  Effect.gen(function* () {
    const allow = yield* Effect.forEach(options.allow ?? [], parseEntry)
    const resolve = options.resolve ?? resolveWithDns
    const allowHttp = options.allowHttp === true

    const checkAddress = (host: string, address: string): Either.Either<void, OutboundRefused> => {
      const name = normalizeHost(host)
      let ip: ipaddr.IPv4 | ipaddr.IPv6
      try {
        // process() turns ::ffff:a.b.c.d into a.b.c.d, so a mapped address meets IPv4's ranges.
        ip = ipaddr.process(address)
      } catch {
        return Either.left(new OutboundRefused({ host: name, address, reason: { _tag: "Unparsable" } }))
      }
      const shown = ip.toString()
      if (metadata.some((m) => sameAddress(ip, m))) {
        return allow.some((e) => e._tag === "Address" && sameAddress(ip, e.ip))
          ? Either.void
          : Either.left(new OutboundRefused({ host: name, address: shown, reason: { _tag: "Metadata" } }))
      }
      const range = rangeOf(ip)
      if (range === "unicast") return Either.void
      const allowed = allow.some((e) =>
        e._tag === "Host" ? e.name === name : e.ip.kind() === ip.kind() && ip.match(e.ip, e.bits),
      )
      return allowed
        ? Either.void
        : Either.left(new OutboundRefused({ host: name, address: shown, reason: { _tag: "Range", range } }))
    }

    const checkUrl = (url: URL): Either.Either<void, OutboundRefused> => {
      const host = normalizeHost(url.hostname)
      if (url.protocol === "http:" && !allowHttp) {
        return Either.left(new OutboundRefused({ host, reason: { _tag: "Http" } }))
      }
      if (url.protocol !== "https:" && url.protocol !== "http:") {
        return Either.left(new OutboundRefused({ host, reason: { _tag: "Scheme", scheme: url.protocol } }))
      }
      return isIP(host) === 0 ? Either.void : checkAddress(host, host)
    }

    const lookup: Net.LookupFunction = (hostname, lookupOptions, callback) => {
      // Through a resolved promise, so a resolver that throws rather than rejects still answers
      // the callback instead of throwing inside net.connect.
      Promise.resolve(hostname)
        .then((name) => resolve(name, familyOf(lookupOptions.family)))
        .then(
          (addresses) => {
            const first = addresses[0]
            if (first === undefined) {
              const error: NodeJS.ErrnoException = new Error(`no address for ${hostname}`)
              error.code = "ENOTFOUND"
              return callback(error, "")
            }
            for (const { address } of addresses) {
              const checked = checkAddress(hostname, address)
              if (Either.isLeft(checked)) return callback(checked.left, "")
            }
            return lookupOptions.all === true
              ? callback(
                  null,
                  addresses.map(({ address, family }) => ({ address, family })),
                )
              : callback(null, first.address, first.family)
          },
          (error: NodeJS.ErrnoException) => callback(error, ""),
        )
    }

    return { checkUrl, checkAddress, lookup }
  })

// internal

type Entry =
  | { readonly _tag: "Host"; readonly name: string }
  | { readonly _tag: "Address"; readonly ip: ipaddr.IPv4 | ipaddr.IPv6; readonly bits: number }
  | { readonly _tag: "Cidr"; readonly ip: ipaddr.IPv4 | ipaddr.IPv6; readonly bits: number }

const hostName = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/

const parseEntry = (entry: string): Effect.Effect<Entry, OutboundAllowListInvalid> =>
  Effect.suspend(() => {
    const text = entry.trim()
    try {
      if (text.includes("/")) {
        // ipaddr.js also reads classful shorthands ("10.0.0/8", "10/8"); an allow-list entry
        // must spell its address out, so a typo does not open a range nobody meant.
        const [address = "", prefix = ""] = text.split("/")
        if (isIP(address) === 0 || !/^\d{1,3}$/.test(prefix))
          return Effect.fail(new OutboundAllowListInvalid({ entry }))
        const [ip, bits] = ipaddr.parseCIDR(text)
        return Effect.succeed(unmapCidr(ip, bits))
      }
      if (isIP(text) !== 0) {
        const ip = ipaddr.process(text)
        return Effect.succeed({ _tag: "Address", ip, bits: ip.kind() === "ipv4" ? 32 : 128 })
      }
    } catch {
      return Effect.fail(new OutboundAllowListInvalid({ entry }))
    }
    const name = normalizeHost(text)
    return hostName.test(name)
      ? Effect.succeed({ _tag: "Host", name })
      : Effect.fail(new OutboundAllowListInvalid({ entry }))
  })

/** An IPv4-mapped CIDR (::ffff:10.0.0.0/104) is read as its IPv4 CIDR, as addresses are. */
const unmapCidr = (ip: ipaddr.IPv4 | ipaddr.IPv6, bits: number): Entry =>
  ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96
    ? { _tag: "Cidr", ip: (ip as ipaddr.IPv6).toIPv4Address(), bits: bits - 96 }
    : { _tag: "Cidr", ip, bits }

/**
 * ipaddr.js's range, plus the deprecated IPv4-compatible block ::/96 (RFC 4291 §2.5.5.1), which
 * it calls unicast although ::127.0.0.1 embeds a loopback address.
 */
const rangeOf = (ip: ipaddr.IPv4 | ipaddr.IPv6): string => {
  const range = ip.range()
  return range === "unicast" && ip.kind() === "ipv6" && ip.match(ipv4Compatible) ? "ipv4Compatible" : range
}

const ipv4Compatible = ipaddr.parseCIDR("::/96")

const metadata = metadataAddresses.map((address) => ipaddr.process(address))

const sameAddress = (a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6): boolean =>
  a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString()

/** The URL's hostname brackets IPv6 ("[::1]") and a name may end in the root's dot. */
const normalizeHost = (host: string): string =>
  host
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase()

const familyOf = (family: number | string | undefined): 0 | 4 | 6 =>
  family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0

const resolveWithDns: Resolve = (host, family) => Dns.promises.lookup(host, { all: true, family })
