/**
 * Standard Webhooks signing (https://www.standardwebhooks.com; §8.4): a receiver
 * checks `webhook-signature` against HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}"
 * under the subscription's secret, and rejects a timestamp far from its clock (replay).
 *
 * Time is a parameter: the deliverer passes the attempt's instant, so a retry is signed with the
 * time it is sent (a receiver's tolerance is about five minutes) while `webhook-id` stays stable.
 */
import { createHmac, randomBytes } from "node:crypto"
import { Effect, Schema } from "effect"
import type * as Time from "../domain/Time.js"

const PREFIX = "whsec_"

/** A signing secret in the Standard Webhooks form: `whsec_` and the base64 of the key bytes. */
export const WebhookSecret = Schema.String.pipe(
  Schema.pattern(/^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/),
  Schema.filter((s) => s.length > PREFIX.length, { message: () => "a webhook secret must not be empty" }),
  Schema.brand("WebhookSecret"),
)
export type WebhookSecret = typeof WebhookSecret.Type

/** The three headers a signed delivery carries. */
export interface SignedHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

/** A new secret: 32 random bytes (the HMAC-SHA256 block's worth of key material is more than enough). */
export const generate: Effect.Effect<WebhookSecret> = Effect.sync(() =>
  WebhookSecret.make(`${PREFIX}${randomBytes(32).toString("base64")}`),
)

/**
 * The headers for `body` sent as message `id` at `at`, signed once per secret: during a rotation
 * the subscription holds the new and the old secret, and a receiver accepts a delivery when any
 * of the space-separated signatures verifies with the secret it knows.
 */
export const sign = (input: {
  readonly id: string
  readonly at: Time.Timestamp
  readonly body: Uint8Array
  readonly secrets: readonly [WebhookSecret, ...ReadonlyArray<WebhookSecret>]
}): SignedHeaders => {
  const timestamp = String(input.at)
  return {
    "webhook-id": input.id,
    "webhook-timestamp": timestamp,
    "webhook-signature": input.secrets
      .map((secret) => `v1,${signature(secret, `${input.id}.${timestamp}.`, input.body)}`)
      .join(" "),
  }
}

// internal

const signature = (secret: WebhookSecret, prefix: string, body: Uint8Array): string =>
  createHmac("sha256", Buffer.from(secret.slice(PREFIX.length), "base64"))
    .update(prefix)
    .update(body)
    .digest("base64")
