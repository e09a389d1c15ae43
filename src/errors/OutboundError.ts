import { Schema } from "effect"

/**
 * Why the outbound guard refused a connection: a scheme other than https (or http when it is
 * configured), an address in a range ipaddr.js names (loopback, private, linkLocal, ...), a cloud
 * metadata address, a resolver answer that is not an address at all, or a URL that does not parse.
 */
export const OutboundRefusal = Schema.Union(
  Schema.TaggedStruct("Scheme", { scheme: Schema.String }),
  Schema.TaggedStruct("Http", {}),
  Schema.TaggedStruct("Range", { range: Schema.String }),
  Schema.TaggedStruct("Metadata", {}),
  Schema.TaggedStruct("Unparsable", {}),
  Schema.TaggedStruct("Malformed", {}),
)
export type OutboundRefusal = typeof OutboundRefusal.Type

/**
 * The outbound guard refused a connection. `host` is the URL's host name only: the full URL can
 * carry credentials and a query, and this error is logged and stored. Never retryable: the same
 * URL resolves into the same ranges until the configuration changes.
 */
export class OutboundRefused extends Schema.TaggedError<OutboundRefused>()("OutboundRefused", {
  host: Schema.String,
  address: Schema.optional(Schema.String),
  reason: OutboundRefusal,
}) {
  get retryable(): false {
    return false
  }

  override get message(): string {
    const to = `outbound connection to ${this.host}${this.address === undefined || this.address === this.host ? "" : ` (${this.address})`} refused`
    return `${to}: ${refusalText(this.reason, this.address)}`
  }
}

const refusalText = (reason: OutboundRefusal, address: string | undefined): string => {
  switch (reason._tag) {
    case "Scheme":
      return `the scheme ${JSON.stringify(reason.scheme)} is not allowed (https only)`
    case "Http":
      return "http is not allowed unless the outbound configuration sets allowHttp"
    case "Range":
      return `${address} is a ${reason.range} address, which the outbound allow-list does not name`
    case "Metadata":
      return `${address} is a cloud metadata address, which the outbound allow-list does not name`
    case "Unparsable":
      return `the resolver answered ${JSON.stringify(address)}, which is not an IP address`
    case "Malformed":
      return "the URL does not parse"
  }
}

/** The receiver did not answer within the attempt's timeout. Retryable. */
export class OutboundTimeout extends Schema.TaggedError<OutboundTimeout>()("OutboundTimeout", {
  host: Schema.String,
  timeoutMillis: Schema.Number,
}) {
  get retryable(): true {
    return true
  }

  override get message(): string {
    return `outbound request to ${this.host} got no answer within ${this.timeoutMillis} ms`
  }
}

/**
 * No answer because the connection failed: the name did not resolve, the connection was refused
 * or reset, TLS failed. `detail` is the cause's code or message, never the URL. Retryable.
 */
export class OutboundUnreachable extends Schema.TaggedError<OutboundUnreachable>()("OutboundUnreachable", {
  host: Schema.String,
  detail: Schema.String,
}) {
  get retryable(): true {
    return true
  }

  override get message(): string {
    return `outbound request to ${this.host} failed to connect: ${this.detail}`
  }
}

/**
 * The receiver answered 3xx. Redirects are never followed (a redirect could lead anywhere the
 * guard was not asked about), so the answer is final for this attempt. Not retryable.
 */
export class OutboundRedirected extends Schema.TaggedError<OutboundRedirected>()("OutboundRedirected", {
  host: Schema.String,
  status: Schema.Number,
  elapsedMillis: Schema.Number,
}) {
  get retryable(): false {
    return false
  }

  override get message(): string {
    return `outbound request to ${this.host} answered ${this.status} (a redirect, not followed)`
  }
}

/** The receiver answered 4xx other than 408 and 429 (or a status outside 2xx-5xx): it refused this request. Not retryable. */
export class OutboundRejected extends Schema.TaggedError<OutboundRejected>()("OutboundRejected", {
  host: Schema.String,
  status: Schema.Number,
  elapsedMillis: Schema.Number,
}) {
  get retryable(): false {
    return false
  }

  override get message(): string {
    return `outbound request to ${this.host} was rejected with ${this.status}`
  }
}

/**
 * The receiver answered 408 or 429: it asks to be tried again later (a timeout on its side, a rate
 * limit). Retryable: Standard Webhooks receivers and their senders treat both as "not now".
 */
export class OutboundThrottled extends Schema.TaggedError<OutboundThrottled>()("OutboundThrottled", {
  host: Schema.String,
  status: Schema.Number,
  elapsedMillis: Schema.Number,
}) {
  get retryable(): true {
    return true
  }

  override get message(): string {
    return `outbound request to ${this.host} was answered ${this.status}: try again later`
  }
}

/** The receiver answered 5xx: it failed, and may not the next time. Retryable. */
export class OutboundServerFailed extends Schema.TaggedError<OutboundServerFailed>()("OutboundServerFailed", {
  host: Schema.String,
  status: Schema.Number,
  elapsedMillis: Schema.Number,
}) {
  get retryable(): true {
    return true
  }

  override get message(): string {
    return `outbound request to ${this.host} failed with ${this.status}`
  }
}

/** Every way one outbound POST attempt can fail; each says whether a retry may succeed. */
export type OutboundPostError =
  | OutboundRefused
  | OutboundTimeout
  | OutboundUnreachable
  | OutboundRedirected
  | OutboundRejected
  | OutboundThrottled
  | OutboundServerFailed

/** An outbound allow-list entry is neither a CIDR, an IP address nor a host name. */
export class OutboundAllowListInvalid extends Schema.TaggedError<OutboundAllowListInvalid>()(
  "OutboundAllowListInvalid",
  { entry: Schema.String },
) {
  override get message(): string {
    return `outbound allow-list entry ${JSON.stringify(this.entry)} is not a CIDR, an IP address or a host name`
  }
}
