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

/** The token in `input`: one trailing newline (from `echo`) dropped; empty or inner whitespace refused. */
export const tokenOf = (input: string): Effect.Effect<string, TokenRefused> => {
  const token = input.replace(/\r?\n$/, "")
  if (token.length === 0) return Effect.fail(new TokenRefused({ message: "no token on standard input" }))
  // A bearer token cannot carry whitespace (RFC 6750 token68); one that does is a paste error.
  if (/\s/.test(token)) return Effect.fail(new TokenRefused({ message: "the token contains whitespace" }))
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
