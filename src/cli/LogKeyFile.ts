/**
 * The transparency log's signing key from the command line (§6.5): `--log-key <file>`, an Ed25519
 * seed of 32 random bytes in base64 (as the KEK file is: `openssl rand -base64 32`), and
 * `--log-name <deployment>`, the name every checkpoint's origin starts with and the key's name.
 * Not in the key ring: that holds AES data keys wrapped for erasure, and a signing key must
 * outlive every erasure; it is one file the operator keeps, like the KEK.
 */
import { readFileSync } from "node:fs"
import { Options } from "@effect/cli"
import { Config, Effect, Either, Option } from "effect"
import * as LogKey from "../domain/LogKey.js"
import * as SignedNote from "../domain/SignedNote.js"
import { LogKeyInvalid } from "../errors/LogError.js"

export const DEFAULT_NAME = "agentplane"

export const logKey = Options.file("log-key").pipe(
  Options.withDescription(
    "file holding the transparency log's Ed25519 signing key, a 32-byte seed in base64, e.g. from openssl rand -base64 32 (env AGENTPLANE_LOG_KEY); absent: seals are sequenced but not integrated or signed",
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_LOG_KEY")),
  Options.optional,
)

export const logName = Options.text("log-name").pipe(
  Options.withDescription(
    `the deployment's name, leading every checkpoint's origin <name>/log/<tenant> and naming the key (env AGENTPLANE_LOG_NAME); default ${DEFAULT_NAME}`,
  ),
  Options.withFallbackConfig(Config.string("AGENTPLANE_LOG_NAME")),
  Options.withDefault(DEFAULT_NAME),
)

export interface Flags {
  readonly logKey: Option.Option<string>
  readonly logName: string
}

export const options: Options.Options<Flags> = Options.all({ logKey, logName })

/** The key the flags name, or none without `--log-key`. */
export const load = (flags: Flags): Effect.Effect<Option.Option<LogKey.LogKey>, LogKeyInvalid> =>
  Option.match(flags.logKey, {
    onNone: () => Effect.succeedNone,
    onSome: (path) => Effect.asSome(fromFile(path, flags.logName)),
  })

/** The key in `path` named `name`. */
export const fromFile = (path: string, name: string): Effect.Effect<LogKey.LogKey, LogKeyInvalid> =>
  Effect.gen(function* () {
    const text = yield* Effect.try({
      try: () => readFileSync(path, "utf8").trim(),
      catch: (e) => new LogKeyInvalid({ detail: `cannot read ${path}: ${String(e)}` }),
    })
    const seed = Buffer.from(text, "base64")
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || seed.length !== 32)
      return yield* new LogKeyInvalid({
        detail: `${path} is not a 32-byte seed in base64 (make one with openssl rand -base64 32)`,
      })
    if (!LogKey.isDeployment(name) || !SignedNote.isKeyName(name))
      return yield* new LogKeyInvalid({ detail: `--log-name ${JSON.stringify(name)}: no whitespace, + or control` })
    return yield* Either.mapLeft(
      LogKey.make(name, SignedNote.signer(name, seed)),
      (e) => new LogKeyInvalid({ detail: e.message }),
    )
  })
