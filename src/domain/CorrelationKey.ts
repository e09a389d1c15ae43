import { Order, Schema } from "effect"

/** A business value scoped to the tenant (`document=DOC-1`): how messages find their case. */
export class CorrelationKey extends Schema.Class<CorrelationKey>("CorrelationKey")({
  namespace: Schema.String,
  value: Schema.String,
}) {
  override toString(): string {
    return `${this.namespace}=${this.value}`
  }
}

export const make = (namespace: string, value: string): CorrelationKey => new CorrelationKey({ namespace, value })

// Code-point order (the order of UTF-8 bytes), so the answer does not depend on a database's
// collation or on JavaScript's UTF-16 comparison.
const byCodePoint: Order.Order<string> = (a, b) => {
  const c = Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))
  return c < 0 ? -1 : c > 0 ? 1 : 0
}

/** (namespace, value), each by code point. */
export const order: Order.Order<CorrelationKey> = Order.combine(
  Order.mapInput(byCodePoint, (k: CorrelationKey) => k.namespace),
  Order.mapInput(byCodePoint, (k: CorrelationKey) => k.value),
)

export const equals = (a: CorrelationKey, b: CorrelationKey): boolean =>
  a.namespace === b.namespace && a.value === b.value

/** The keys without repeats, first occurrence kept, order otherwise unchanged. */
export const dedupe = (keys: ReadonlyArray<CorrelationKey>): ReadonlyArray<CorrelationKey> =>
  keys.filter((k, i) => keys.findIndex((other) => equals(other, k)) === i)
