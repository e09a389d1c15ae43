/**
 * `agentplane token-digest`: the digest a credential table stores for a token (§8.1).
 *
 * The token is read from standard input, not from an argument, so it stays out of shell history
 * and out of the process list; and the digest comes from the very function the server looks
 * tokens up with, so an operator's entry cannot disagree with it on encoding or case.
 */
import { Command } from "@effect/cli"
import { Console, Effect, Schema } from "effect"
import * as Credentials from "../http/Credentials.js"

/** The token on standard input was empty or contained whitespace. */
export class TokenRefused extends Schema.TaggedError<TokenRefused>()("TokenRefused", { message: Schema.String }) {}

/**
 * The token in `input`: one trailing newline (from `echo`) dropped; empty, inner whitespace or
 * anything but printable ASCII refused.
 */
export const tokenOf = (input: string): Effect.Effect<string, TokenRefused> => {
  const token = input.replace(/\r?\n$/, "")
  if (token.length === 0) return Effect.fail(new TokenRefused({ message: "no token on standard input" }))
  // A bearer token cannot carry whitespace (RFC 6750 token68); one that does is a paste error.
  if (/\s/.test(token)) return Effect.fail(new TokenRefused({ message: "the token contains whitespace" }))
  // A header carries bytes: curl sends "é" as UTF-8, Node's server reads the bytes as Latin-1,
  // and the digest of what arrives is not the digest of "é"; the token would admit nobody.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    return Effect.fail(
      new TokenRefused({
        message:
          "the token contains a character outside printable ASCII, which an Authorization header does not carry reliably",
      }),
    )
  }
  return Effect.succeed(token)
}

export const command = Command.make("token-digest", {}, () =>
  readStdin.pipe(
    Effect.flatMap(tokenOf),
    Effect.flatMap((token) => Console.log(Credentials.digest(token))),
  ),
).pipe(Command.withDescription("print the SHA-256 digest of the token on standard input, for a credential table"))

// internal

const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)))
  return Buffer.concat(chunks).toString("utf8")
})
