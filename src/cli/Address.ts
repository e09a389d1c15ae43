/**
 * `--addr`: where `serve` listens, `host:port` (IPv6 as `[::1]:8080`).
 */
import { createServer } from "node:net"
import { Effect, Either, Schema } from "effect"

export const DEFAULT = "127.0.0.1:8080"

export interface Address {
  readonly host: string
  /** 0 asks the system for a free port (tests use it). */
  readonly port: number
}

/** `serve` cannot listen on `address`; `reason` says why, in words an operator can act on. */
export class AddressUnavailable extends Schema.TaggedError<AddressUnavailable>()("AddressUnavailable", {
  address: Schema.String,
  reason: Schema.String,
}) {
  override get message(): string {
    return `cannot listen on ${this.address}: ${this.reason}`
  }
}

/** `host:port` → the address; a missing host, a port outside 0 … 65535 or garbage is refused with why. */
export const parse = (input: string): Either.Either<Address, string> => {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(input.trim())
  const host = match?.[1] ?? match?.[2]
  const port = Number(match?.[3])
  if (host === undefined || !Number.isInteger(port) || port > 65_535) {
    return Either.left(`--addr ${JSON.stringify(input)} is not host:port (e.g. ${DEFAULT}, [::1]:8080)`)
  }
  return Either.right({ host, port })
}

/** `host:port`, an IPv6 host in brackets, as `--addr` takes it. */
export const show = (address: Address): string =>
  `${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`

/**
 * Succeeds if `address` can be bound now: binds it and lets it go at once. `serve` asks before it
 * opens the store, so a taken port costs no migration and creates no database file. Another
 * process may still take the port before the server binds it; that listen fails with the same
 * `AddressUnavailable` (`unavailable`).
 */
export const probe = (address: Address): Effect.Effect<void, AddressUnavailable> =>
  Effect.async<void, AddressUnavailable>((resume) => {
    const server = createServer()
    server.once("error", (error) => resume(Effect.fail(unavailable(address, error))))
    server.listen({ host: address.host, port: address.port }, () => server.close(() => resume(Effect.void)))
    return Effect.sync(() => {
      if (server.listening) server.close()
    })
  })

/** The refusal for a failed listen on `address`, its cause (a Node system error) in words. */
export const unavailable = (address: Address, cause: unknown): AddressUnavailable => {
  const code = typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined
  const reason =
    code === "EADDRINUSE"
      ? "the address is already in use (another server is listening there); stop it or give another --addr"
      : code === "EACCES"
        ? "permission denied (ports below 1024 need privileges); give another --addr"
        : code === "EADDRNOTAVAIL"
          ? "no network interface of this machine has that address; give another --addr"
          : code === "ENOTFOUND" || code === "EAI_AGAIN"
            ? `the host name ${JSON.stringify(address.host)} does not resolve; give another --addr`
            : cause instanceof Error && cause.message !== ""
              ? cause.message
              : String(cause)
  return new AddressUnavailable({ address: show(address), reason })
}
