/**
 * `--addr`: where `serve` listens, `host:port` (IPv6 as `[::1]:8080`).
 */
import { Either } from "effect"

export const DEFAULT = "127.0.0.1:8080"

export interface Address {
  readonly host: string
  /** 0 asks the system for a free port (tests use it). */
  readonly port: number
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
